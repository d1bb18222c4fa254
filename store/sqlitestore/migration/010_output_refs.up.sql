-- agentrt schema version 10: find a tool call by its output ref. A spilled
-- output lives in the output store (<data dir>/outputs), which keeps no
-- tenant; the tool call that produced it does, so reading an output by its
-- ref (GET /v1/outputs/{ref}, agentrt outputs get) checks the ref against
-- the tenant's tool calls. Partial: calls without an output ref (most of
-- them) add nothing to the index.
CREATE INDEX tool_calls_output_ref ON tool_calls (output_ref, tenant_id, started_at) WHERE output_ref != '';
