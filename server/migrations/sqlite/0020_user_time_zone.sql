-- The time zone a user's times are shown in (an IANA name); UTC until the user picks one.
ALTER TABLE users ADD COLUMN time_zone TEXT NOT NULL DEFAULT 'UTC';
