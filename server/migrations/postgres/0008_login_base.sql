-- Where the user last logged in to the API from (scheme and host of the login request, such as
-- `https://wachet.example`): webhook payloads link to the notification there.
ALTER TABLE users ADD COLUMN login_base TEXT;
