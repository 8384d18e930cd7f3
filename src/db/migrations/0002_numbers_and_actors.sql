CREATE TABLE "phone_number_orders" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"status" text NOT NULL,
	"order_type" text NOT NULL,
	"numbers" jsonb NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "phone_numbers" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"mode" text NOT NULL,
	"number" text NOT NULL,
	"status" text NOT NULL,
	"order_id" text,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	"released_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "actor_snapshots" (
	"kind" text NOT NULL,
	"id" text NOT NULL,
	"machine_version" text NOT NULL,
	"snapshot" jsonb NOT NULL,
	"status" text NOT NULL,
	"shard" integer NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "actor_snapshots_kind_id_pk" PRIMARY KEY("kind","id")
);
--> statement-breakpoint
CREATE TABLE "durable_timers" (
	"id" text PRIMARY KEY NOT NULL,
	"actor_kind" text NOT NULL,
	"actor_id" text NOT NULL,
	"name" text NOT NULL,
	"token" text NOT NULL,
	"due_at" timestamp (3) with time zone NOT NULL,
	"event" jsonb NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "phone_number_orders" ADD CONSTRAINT "phone_number_orders_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "phone_numbers" ADD CONSTRAINT "phone_numbers_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "phone_number_orders_account_page_idx" ON "phone_number_orders" USING btree ("account_id","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "phone_numbers_live_uq" ON "phone_numbers" USING btree ("number") WHERE "phone_numbers"."status" <> 'released';--> statement-breakpoint
CREATE INDEX "phone_numbers_account_page_idx" ON "phone_numbers" USING btree ("account_id","created_at","id");--> statement-breakpoint
CREATE INDEX "actor_snapshots_active_idx" ON "actor_snapshots" USING btree ("shard","status");--> statement-breakpoint
CREATE INDEX "durable_timers_due_idx" ON "durable_timers" USING btree ("due_at");--> statement-breakpoint
CREATE INDEX "durable_timers_actor_idx" ON "durable_timers" USING btree ("actor_kind","actor_id","name");