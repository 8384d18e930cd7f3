CREATE TABLE "emergency_addresses" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"user_id" text NOT NULL,
	"address" jsonb NOT NULL,
	"registered_ip" text,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "location_e911" (
	"location_id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"status" text NOT NULL,
	"place_id" text NOT NULL,
	"details" jsonb,
	"validated_at" timestamp (3) with time zone NOT NULL,
	"provisioned_at" timestamp (3) with time zone,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "emergency_addresses" ADD CONSTRAINT "emergency_addresses_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "emergency_addresses" ADD CONSTRAINT "emergency_addresses_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "location_e911" ADD CONSTRAINT "location_e911_location_id_locations_id_fk" FOREIGN KEY ("location_id") REFERENCES "public"."locations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "location_e911" ADD CONSTRAINT "location_e911_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "emergency_addresses_user_page_idx" ON "emergency_addresses" USING btree ("user_id","created_at","id");--> statement-breakpoint
CREATE INDEX "emergency_addresses_account_ip_idx" ON "emergency_addresses" USING btree ("account_id","registered_ip");--> statement-breakpoint
CREATE INDEX "location_e911_account_idx" ON "location_e911" USING btree ("account_id","status");