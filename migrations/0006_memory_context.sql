-- 0006: conversation context of a memory. `context` holds the text of the turns around the one a
-- memory came from (previous user/assistant turns of the request; the next user turn when it
-- arrives later in the same session). It only helps recall find the memory, as a second,
-- lower-weighted search field; it is never injected. '' when unknown (API writes, imports, older
-- rows). See docs/ARCHITECTURE.md, "Data model".
ALTER TABLE memories ADD COLUMN context TEXT NOT NULL DEFAULT '';
