-- Values now show the target of each link an xPath selects (watchLinks, null by default). A
-- monitor made before keeps its values as they were (no targets), so an upgrade raises no
-- change on every monitor whose xPath selects links; its person may turn targets on.
UPDATE tasks
SET definition = json_set(definition, '$.watchLinks', json('false'))
WHERE json_type(definition, '$.xPath') = 'text'
  AND json_type(definition, '$.watchLinks') IS NULL;
