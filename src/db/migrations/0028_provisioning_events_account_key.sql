-- History rows go with their device (whose key cascades from the account): a second key to
-- accounts only cost each insert a lookup (src/db/schema/devices.ts).
ALTER TABLE "provisioning_events" DROP CONSTRAINT "provisioning_events_account_id_accounts_id_fk";
