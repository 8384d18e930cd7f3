CREATE TABLE "button_overrides" (
	"id" text PRIMARY KEY NOT NULL,
	"device_id" text NOT NULL,
	"key" integer NOT NULL,
	"type" text NOT NULL,
	"value" text,
	"label" text,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "button_templates" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"name" text NOT NULL,
	"vendor" text NOT NULL,
	"models" text[] NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "device_lines" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"device_id" text NOT NULL,
	"line_number" integer NOT NULL,
	"user_id" text,
	"extension_id" text,
	"label" text,
	"sip_username" text NOT NULL,
	"sip_password_sealed" text NOT NULL,
	"sip_domain" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "device_users" (
	"id" text NOT NULL,
	"account_id" text NOT NULL,
	"device_id" text NOT NULL,
	"user_id" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "device_users_device_id_user_id_pk" PRIMARY KEY("device_id","user_id")
);
--> statement-breakpoint
CREATE TABLE "devices" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"type" text NOT NULL,
	"vendor" text NOT NULL,
	"model" text NOT NULL,
	"mac_address" text,
	"name" text,
	"location_id" text,
	"base_id" text,
	"button_template_id" text,
	"status" text NOT NULL,
	"provisioning_username" text,
	"provisioning_password_sealed" text,
	"ip_address" text,
	"provisioned_at" timestamp (3) with time zone,
	"last_fetched_at" timestamp (3) with time zone,
	"check_sync_requested_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "provisioning_events" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"device_id" text NOT NULL,
	"type" text NOT NULL,
	"error_code" text,
	"ip_address" text,
	"user_agent" text,
	"created_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "template_buttons" (
	"id" text PRIMARY KEY NOT NULL,
	"template_id" text NOT NULL,
	"key" integer NOT NULL,
	"type" text NOT NULL,
	"value" text,
	"label" text,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "button_overrides" ADD CONSTRAINT "button_overrides_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "button_templates" ADD CONSTRAINT "button_templates_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "device_lines" ADD CONSTRAINT "device_lines_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "device_lines" ADD CONSTRAINT "device_lines_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "device_lines" ADD CONSTRAINT "device_lines_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "device_lines" ADD CONSTRAINT "device_lines_extension_id_extensions_id_fk" FOREIGN KEY ("extension_id") REFERENCES "public"."extensions"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "device_users" ADD CONSTRAINT "device_users_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "device_users" ADD CONSTRAINT "device_users_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "device_users" ADD CONSTRAINT "device_users_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "devices" ADD CONSTRAINT "devices_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "devices" ADD CONSTRAINT "devices_location_id_locations_id_fk" FOREIGN KEY ("location_id") REFERENCES "public"."locations"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "devices" ADD CONSTRAINT "devices_base_id_devices_id_fk" FOREIGN KEY ("base_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "devices" ADD CONSTRAINT "devices_button_template_id_button_templates_id_fk" FOREIGN KEY ("button_template_id") REFERENCES "public"."button_templates"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "provisioning_events" ADD CONSTRAINT "provisioning_events_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "provisioning_events" ADD CONSTRAINT "provisioning_events_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "template_buttons" ADD CONSTRAINT "template_buttons_template_id_button_templates_id_fk" FOREIGN KEY ("template_id") REFERENCES "public"."button_templates"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "button_overrides_key_uq" ON "button_overrides" USING btree ("device_id","key");--> statement-breakpoint
CREATE INDEX "button_overrides_page_idx" ON "button_overrides" USING btree ("device_id","created_at","id");--> statement-breakpoint
CREATE INDEX "button_templates_account_page_idx" ON "button_templates" USING btree ("account_id","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "device_lines_number_uq" ON "device_lines" USING btree ("device_id","line_number");--> statement-breakpoint
CREATE UNIQUE INDEX "device_lines_sip_username_uq" ON "device_lines" USING btree ("sip_username");--> statement-breakpoint
CREATE INDEX "device_lines_page_idx" ON "device_lines" USING btree ("device_id","created_at","id");--> statement-breakpoint
CREATE INDEX "device_users_page_idx" ON "device_users" USING btree ("device_id","created_at","id");--> statement-breakpoint
CREATE INDEX "device_users_account_idx" ON "device_users" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "device_users_user_idx" ON "device_users" USING btree ("user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "devices_mac_uq" ON "devices" USING btree ("mac_address");--> statement-breakpoint
CREATE INDEX "devices_account_page_idx" ON "devices" USING btree ("account_id","created_at","id");--> statement-breakpoint
CREATE INDEX "devices_account_type_idx" ON "devices" USING btree ("account_id","type","created_at","id");--> statement-breakpoint
CREATE INDEX "devices_base_idx" ON "devices" USING btree ("base_id");--> statement-breakpoint
CREATE INDEX "devices_location_idx" ON "devices" USING btree ("location_id");--> statement-breakpoint
CREATE INDEX "provisioning_events_page_idx" ON "provisioning_events" USING btree ("device_id","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "template_buttons_key_uq" ON "template_buttons" USING btree ("template_id","key");--> statement-breakpoint
CREATE INDEX "template_buttons_page_idx" ON "template_buttons" USING btree ("template_id","created_at","id");