CREATE INDEX sessions_tenant ON sessions (tenant_id, id);
DROP INDEX sessions_tenant_created;
