-- Undispatched events move from a flag on the event to a narrow table of their own
-- (src/db/schema/events.ts says why). The events not dispatched yet keep their place.
CREATE TABLE "event_outbox" (
	"seq" bigint PRIMARY KEY NOT NULL
);
--> statement-breakpoint
INSERT INTO "event_outbox" ("seq") SELECT "seq" FROM "events" WHERE NOT "dispatched";
--> statement-breakpoint
-- Once per statement, for every row it inserted: an event is undispatched from its
-- first moment, whoever writes it.
CREATE FUNCTION "event_outbox_add"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO "event_outbox" ("seq") SELECT "seq" FROM "inserted_events";
	RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "events_to_outbox" AFTER INSERT ON "events" REFERENCING NEW TABLE AS "inserted_events" FOR EACH STATEMENT EXECUTE FUNCTION "event_outbox_add"();
--> statement-breakpoint
DROP INDEX "events_undispatched_idx";--> statement-breakpoint
ALTER TABLE "events" DROP COLUMN "dispatched";
