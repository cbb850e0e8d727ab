-- Learned noise (issue 19): whether a monitor's next successful check also takes quick samples
-- of its value to learn what changes without meaning (set when a SinglePage monitor is created
-- or what it watches changes, cleared once the samples are taken), and what the learning has to
-- tell a person about the monitor's noise (`LearnState::notice`, kept beside the confirmation
-- state so listing monitors does not read that state's values).
ALTER TABLE tasks ADD COLUMN sample_noise INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN noise_notice TEXT;
