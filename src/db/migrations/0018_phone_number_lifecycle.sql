ALTER TABLE "phone_numbers" ADD COLUMN "activated_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "phone_numbers" ADD COLUMN "sms_port_out_opened_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "phone_numbers" ADD COLUMN "sms_port_out_expires_at" timestamp (3) with time zone;