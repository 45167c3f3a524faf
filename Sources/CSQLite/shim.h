#ifndef PEERNODE_CSQLITE_SHIM_H
#define PEERNODE_CSQLITE_SHIM_H
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a macro cast Swift cannot import: SQLite copies the bytes. */
static inline int peernode_sqlite3_bind_blob_transient(sqlite3_stmt *s, int i, const void *p, int n) {
    return sqlite3_bind_blob(s, i, p, n, SQLITE_TRANSIENT);
}
static inline int peernode_sqlite3_bind_text_transient(sqlite3_stmt *s, int i, const char *p, int n) {
    return sqlite3_bind_text(s, i, p, n, SQLITE_TRANSIENT);
}
/* Flushes the connection's write-ahead log to the disk (the fsync that
   synchronous=FULL would have made at the commit), through SQLite's own VFS:
   the WAL is the file SQLITE_FCNTL_JOURNAL_POINTER names. SQLITE_OK when
   there is no WAL open yet (nothing was written). */
static inline int peernode_sqlite3_sync_wal(sqlite3 *db) {
    sqlite3_file *wal = 0;
    int rc = sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal);
    if (rc != SQLITE_OK) return rc;
    if (wal == 0 || wal->pMethods == 0) return SQLITE_OK;
    return wal->pMethods->xSync(wal, SQLITE_SYNC_NORMAL);
}
#endif
