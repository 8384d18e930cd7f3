CREATE TABLE "port_order_documents" (
	"order_id" text NOT NULL,
	"kind" text NOT NULL,
	"account_id" text NOT NULL,
	"filename" text,
	"content_type" text NOT NULL,
	"size_bytes" integer NOT NULL,
	"sha256" text NOT NULL,
	"storage_key" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "port_order_documents_order_id_kind_pk" PRIMARY KEY("order_id","kind")
);
--> statement-breakpoint
CREATE TABLE "port_order_events" (
	"id" text PRIMARY KEY NOT NULL,
	"order_id" text NOT NULL,
	"account_id" text NOT NULL,
	"status" text NOT NULL,
	"previous_status" text,
	"rejection" jsonb,
	"created_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "port_orders" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"mode" text NOT NULL,
	"status" text NOT NULL,
	"details" jsonb NOT NULL,
	"submitted_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "port_order_documents" ADD CONSTRAINT "port_order_documents_order_id_port_orders_id_fk" FOREIGN KEY ("order_id") REFERENCES "public"."port_orders"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "port_order_documents" ADD CONSTRAINT "port_order_documents_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "port_order_events" ADD CONSTRAINT "port_order_events_order_id_port_orders_id_fk" FOREIGN KEY ("order_id") REFERENCES "public"."port_orders"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "port_order_events" ADD CONSTRAINT "port_order_events_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "port_orders" ADD CONSTRAINT "port_orders_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "port_order_events_order_page_idx" ON "port_order_events" USING btree ("order_id","created_at","id");--> statement-breakpoint
CREATE INDEX "port_orders_account_page_idx" ON "port_orders" USING btree ("account_id","created_at","id");--> statement-breakpoint
CREATE INDEX "port_orders_account_status_idx" ON "port_orders" USING btree ("account_id","status");