-- A call's row is written when the call starts and updated as it rings, is answered
-- and ends. With full pages each update went to another page: a new entry in every
-- index of calls, its GIN index of endpoints included (three updates in four, by
-- pg_stat_user_tables in `npm run bench -- calls`). Room left in each page lets the
-- updates stay in place (HOT), touching no index. Pages written from now on.
ALTER TABLE "calls" SET (fillfactor = 80);
