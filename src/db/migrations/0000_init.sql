CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"platform_id" text NOT NULL,
	"mode" text NOT NULL,
	"key_hash" text NOT NULL,
	"hint" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"revoked_at" timestamp (3) with time zone,
	CONSTRAINT "api_keys_key_hash_unique" UNIQUE("key_hash")
);
--> statement-breakpoint
CREATE TABLE "platforms" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"live_enabled" boolean DEFAULT false NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "settings" (
	"key" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "accounts" (
	"id" text PRIMARY KEY NOT NULL,
	"platform_id" text NOT NULL,
	"mode" text NOT NULL,
	"email" text,
	"name" text,
	"phone" text,
	"primary_contact_name" text,
	"config" jsonb NOT NULL,
	"default_outbound_did" text,
	"hold_music_clip" text,
	"main_location" text,
	"default_button_template" text,
	"provisioning_base_url" text,
	"billing_address" jsonb,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "locations" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"name" text,
	"address" jsonb NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "pricing_agreements" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"per_user_rate" integer NOT NULL,
	"per_did_rate" integer NOT NULL,
	"per_voiceai_location_rate" integer NOT NULL,
	"effective_from" date NOT NULL,
	"agreed_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tos_acceptances" (
	"account_id" text NOT NULL,
	"version" text NOT NULL,
	"accepted_at" timestamp (3) with time zone NOT NULL,
	"ip" text,
	"user_agent" text,
	"pricing" jsonb NOT NULL,
	CONSTRAINT "tos_acceptances_account_id_version_pk" PRIMARY KEY("account_id","version")
);
--> statement-breakpoint
CREATE TABLE "extensions" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"number" text NOT NULL,
	"target" text NOT NULL,
	"status" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "users" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"name" text,
	"email" text NOT NULL,
	"session_epoch" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "audit_logs" (
	"id" text PRIMARY KEY NOT NULL,
	"platform_id" text NOT NULL,
	"account_id" text,
	"actor" text NOT NULL,
	"credential" text NOT NULL,
	"event" text NOT NULL,
	"resource" text,
	"outcome" text NOT NULL,
	"status_code" integer NOT NULL,
	"ip_address" text,
	"request_id" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"scope" text NOT NULL,
	"key" text NOT NULL,
	"request_hash" text NOT NULL,
	"state" text NOT NULL,
	"locked_at" timestamp (3) with time zone NOT NULL,
	"status_code" integer,
	"response_body" text,
	"created_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "idempotency_keys_scope_key_pk" PRIMARY KEY("scope","key")
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_platform_id_platforms_id_fk" FOREIGN KEY ("platform_id") REFERENCES "public"."platforms"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_platform_id_platforms_id_fk" FOREIGN KEY ("platform_id") REFERENCES "public"."platforms"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "locations" ADD CONSTRAINT "locations_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "pricing_agreements" ADD CONSTRAINT "pricing_agreements_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tos_acceptances" ADD CONSTRAINT "tos_acceptances_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "extensions" ADD CONSTRAINT "extensions_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "users" ADD CONSTRAINT "users_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_keys_platform_idx" ON "api_keys" USING btree ("platform_id");--> statement-breakpoint
CREATE INDEX "accounts_platform_page_idx" ON "accounts" USING btree ("platform_id","mode","created_at","id");--> statement-breakpoint
CREATE INDEX "locations_account_page_idx" ON "locations" USING btree ("account_id","created_at","id");--> statement-breakpoint
CREATE INDEX "pricing_account_idx" ON "pricing_agreements" USING btree ("account_id","agreed_at");--> statement-breakpoint
CREATE UNIQUE INDEX "extensions_account_number_uq" ON "extensions" USING btree ("account_id","number");--> statement-breakpoint
CREATE INDEX "extensions_account_page_idx" ON "extensions" USING btree ("account_id","created_at","id");--> statement-breakpoint
CREATE INDEX "extensions_target_idx" ON "extensions" USING btree ("account_id","target");--> statement-breakpoint
CREATE INDEX "users_account_page_idx" ON "users" USING btree ("account_id","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "users_account_email_uq" ON "users" USING btree ("account_id",lower("email"));--> statement-breakpoint
CREATE INDEX "audit_account_page_idx" ON "audit_logs" USING btree ("account_id","created_at","id");--> statement-breakpoint
CREATE INDEX "audit_request_idx" ON "audit_logs" USING btree ("request_id");--> statement-breakpoint
CREATE INDEX "idempotency_created_idx" ON "idempotency_keys" USING btree ("created_at");