-- Pauses or resumes a schedule; false when there is no schedule of that name.
-- Resuming forgets the planned slot: the slots that passed while paused are
-- not caught up, and the next sweep plans the first slot after now.
CREATE OR REPLACE FUNCTION workhorse_schedule_set_paused_v1(p_name text, p_paused boolean)
RETURNS boolean
LANGUAGE sql AS $$
    WITH changed AS (
        UPDATE workhorse_schedule s
        SET paused = p_paused,
            next_run_at = CASE WHEN s.paused AND NOT p_paused THEN NULL ELSE s.next_run_at END,
            updated_at = now()
        WHERE s.name = p_name
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM changed)
$$;
