CREATE INDEX workhorse_runtime_lease
    ON workhorse_job_runtime (lease_expires_at) WHERE state = 'active';
DROP INDEX workhorse_runtime_active;
