#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H
#include <sqlite3.h>
// SQLITE_TRANSIENT / SQLITE_STATIC cast integers to function pointers: not importable.
static inline sqlite3_destructor_type shim_sqlite_transient(void) { return SQLITE_TRANSIENT; }
static inline sqlite3_destructor_type shim_sqlite_static(void) { return SQLITE_STATIC; }
#endif
