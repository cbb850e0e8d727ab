-- Where notifications of a folder's monitors go when they name no endpoints of their own
-- (a JSON list; NULL: the folder names none, and the folder above it decides).
ALTER TABLE folders ADD COLUMN notification_endpoints TEXT;
