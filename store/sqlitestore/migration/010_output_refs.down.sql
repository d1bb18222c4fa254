DROP INDEX tool_calls_output_ref;
