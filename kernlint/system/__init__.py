"""The process and the file system: where caches live, sealed cache entries, temporary files, isolated worker
processes. May import kernlint.base only."""
