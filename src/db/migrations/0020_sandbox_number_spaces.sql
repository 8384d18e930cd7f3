-- Each platform's sandbox numbers get a space of their own (the platform id); live
-- numbers share the 'live' space. Rows written before are placed by their account.
DROP INDEX "phone_numbers_live_uq";--> statement-breakpoint
ALTER TABLE "phone_numbers" ADD COLUMN "space" text;--> statement-breakpoint
UPDATE "phone_numbers" AS p SET "space" = CASE WHEN p."mode" = 'live' THEN 'live' ELSE a."platform_id" END FROM "accounts" AS a WHERE a."id" = p."account_id";--> statement-breakpoint
ALTER TABLE "phone_numbers" ALTER COLUMN "space" SET NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "phone_numbers_space_number_uq" ON "phone_numbers" USING btree ("space","number") WHERE "phone_numbers"."status" <> 'released';
