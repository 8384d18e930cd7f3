CREATE TABLE "faxes" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"mode" text NOT NULL,
	"direction" text NOT NULL,
	"status" text NOT NULL,
	"did" text NOT NULL,
	"from_number" text NOT NULL,
	"to_number" text NOT NULL,
	"file_id" text,
	"pages" integer NOT NULL,
	"pages_sent" integer,
	"transport" text,
	"error_code" text,
	"is_read" boolean NOT NULL,
	"rendering" jsonb NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	"completed_at" timestamp (3) with time zone,
	"deleted_at" timestamp (3) with time zone
);
--> statement-breakpoint
ALTER TABLE "faxes" ADD CONSTRAINT "faxes_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "faxes" ADD CONSTRAINT "faxes_file_id_files_id_fk" FOREIGN KEY ("file_id") REFERENCES "public"."files"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "faxes_account_page_idx" ON "faxes" USING btree ("account_id","created_at","id");--> statement-breakpoint
CREATE INDEX "faxes_account_direction_created_idx" ON "faxes" USING btree ("account_id","direction","created_at");