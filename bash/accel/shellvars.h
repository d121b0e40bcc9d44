/* shellvars.h: gwtrace's state in shell variables, and the event log (shellvars.c). *
 * Licence: GPL-3.0-or-later, as bash (functions.c says why).
 */
#ifndef GWTRACE_SHELLVARS_H
#define GWTRACE_SHELLVARS_H

#include <stddef.h>

#include "bash_abi.h"
#include "state_names.h"

#define GW_HIDDEN __attribute__((visibility("hidden")))
/* S starts with the string literal P (a prefix of state_names.h) */
#define GW_HAS_PREFIX(s, p) (strncmp((s), (p), sizeof(p) - 1) == 0)

/* The accelerator's contract with the shell files (the variables it reads and writes, the trap
 * texts, the builtins' arguments) is spec/accel-state.json: every name, its meaning and owner, and
 * GWTRACE_ACCEL_STAMP, its version, as macros in the generated state_names.h. The load check names
 * the copy it verified with the stamp this library reports, and gwtrace-auto.sh loads only a copy
 * named with the stamp it was written for (gwtrace-accel.d/STAMP_...): change both whenever that
 * contract changes. */

extern int gw_layout52 GW_HIDDEN; /* 1: bash >= 5.2's ARRAY header; 0: 4.2-5.1's; -1: not known yet */

/* A variable of ours with the attributes WANT (0, att_array or att_assoc), or 0. */
SHELL_VAR *gw_plain(const char *name, int want) GW_HIDDEN;
const char *gw_sval(const char *name) GW_HIDDEN;            /* a scalar's value, or 0 */
long gw_ival(const char *name, int *ok) GW_HIDDEN;          /* a decimal scalar; *ok = 0 if not one */
int gw_sset(const char *name, const char *value) GW_HIDDEN; /* a private scalar, replaced in place */
int gw_iset(const char *name, long n) GW_HIDDEN;
void *gw_array_of(const char *name) GW_HIDDEN;              /* an indexed array's ARRAY, or 0 */
int gw_bash52(void) GW_HIDDEN;                              /* BASH_VERSINFO >= 5.2 */
long gw_array_count(void *a) GW_HIDDEN;                     /* ${#a[@]} */
const char *gw_aref(const char *name, long i) GW_HIDDEN;    /* ${name[i]}, "" when unset */
int gw_aset(const char *name, long i, const char *value) GW_HIDDEN;
void gw_now(char *buf, size_t n) GW_HIDDEN;                 /* EPOCHREALTIME's format */
void gw_emit(const char *line, size_t len) GW_HIDDEN;       /* one append to the event log */

/* The trace context, as both levels keep it (gwtrace-auto-fn.sh notes 8-9, gwtrace-auto-top.sh). */
const char *gw_traceparent(int *set, int *readonly) GW_HIDDEN;  /* ${TRACEPARENT-}, and whether set/readonly */
void gw_export(const char *name, const char *value) GW_HIDDEN;  /* `export NAME=VALUE` */
void gw_span_id(char *buf, size_t n, const char *pfx, long ctr) GW_HIDDEN; /* $_gwtrace_apfx${ctr:1} */
void gw_open_add(const char *sid) GW_HIDDEN;                    /* GWTRACE_AUTO_OPEN+=,SID */
int gw_strip_sid(char *open_list, const char *sid) GW_HIDDEN;   /* ${list%,"SID"}, in place; 1 if it was there */

/* What a case handler returns: done here, or leave it all to the shell code. */
enum { DONE = 0, SHELL = 1 };

/* Slow paths done here (gw_count[DONE]) and handed to the shell code (gw_count[SHELL]), in this
 * process: the load check and tests/test_accel.py read them (`BUILTIN --count VAR`), so that a
 * comparison with the shell code cannot pass with the C code doing nothing. */
extern long gw_count[2] GW_HIDDEN;
int gw_count_request(WORD_LIST *list) GW_HIDDEN; /* `--count VAR`: VAR="DONE SHELL"; 1 if LIST asked */

#endif
