/* shellvars.c: reading and writing the shell variables that hold gwtrace's state, and the event log.
 *
 * The state stays in the shell's own variables (gwtrace-auto*.sh's _gwtrace_a*), so that the shell
 * code, which handles every case the accelerator leaves to it, sees exactly what it would have
 * written itself. Only our private scalars are replaced in place; exported ones (TRACEPARENT,
 * GWTRACE_AUTO_OPEN) go through bind_variable, which tells bash to rebuild the environment.
 *
 * Licence: GPL-3.0-or-later, as bash (functions.c says why).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "shellvars.h"

int gw_layout52 = -1; /* 1: bash >= 5.2's ARRAY header; 0: 4.2-5.1's; -1: not known yet */
long gw_count[2];

int gw_count_request(WORD_LIST *list) {
  char buf[64];
  /* two words: the DEBUG traps pass one ("$_", which may be anything) */
  if (!list || !list->next || list->next->next || strcmp(list->word->word, "--count")) return 0;
  snprintf(buf, sizeof buf, "%ld %ld", gw_count[DONE], gw_count[SHELL]);
  bind_variable(list->next->word->word, buf, 0);
  return 1;
}

SHELL_VAR *gw_plain(const char *name, int want) {
  SHELL_VAR *v = find_variable(name);
  if (!v || (v->attributes & (att_invisible | att_nameref)) ||
      (v->attributes & (att_array | att_assoc)) != want)
    return 0;
  return v;
}

const char *gw_sval(const char *name) {
  SHELL_VAR *v = gw_plain(name, 0);
  return v && v->value ? v->value : 0;
}

long gw_ival(const char *name, int *ok) {
  const char *s = gw_sval(name);
  char *end;
  long n;
  if (!s || !*s) { *ok = 0; return 0; }
  n = strtol(s, &end, 10);
  if (*end) *ok = 0;
  return n;
}

/* A private scalar: replaced in place (no attributes, not exported), as an assignment would. */
int gw_sset(const char *name, const char *value) {
  SHELL_VAR *v = gw_plain(name, 0);
  char *copy;
  if (!v || (v->attributes & (att_readonly | att_exported))) return 0;
  copy = strdup(value);
  if (!copy) return 0;
  free(v->value);
  v->value = copy;
  return 1;
}

int gw_iset(const char *name, long n) {
  char buf[32];
  snprintf(buf, sizeof buf, "%ld", n);
  return gw_sset(name, buf);
}

void *gw_array_of(const char *name) {
  SHELL_VAR *v = gw_plain(name, att_array);
  return v ? v->value : 0;
}

int gw_bash52(void) {
  SHELL_VAR *vi = find_variable(GW_BASH_VERSINFO);
  const char *ma = vi ? array_reference(vi->value, 0) : 0, *mi = vi ? array_reference(vi->value, 1) : 0;
  return ma && mi && (atoi(ma) > 5 || (atoi(ma) == 5 && atoi(mi) >= 2));
}

long gw_array_count(void *a) {
  if (gw_layout52 > 0) return (long)*(arrayind_t *)((char *)a + sizeof(arrayind_t));
  return (long)*(int *)((char *)a + 2 * sizeof(arrayind_t)); /* after the type and max_index */
}

const char *gw_aref(const char *name, long i) {
  void *a = gw_array_of(name);
  char *s = a ? array_reference(a, i) : 0;
  return s ? s : "";
}

int gw_aset(const char *name, long i, const char *value) {
  void *a = gw_array_of(name);
  return a && array_insert(a, i, (char *)value) >= 0;
}

/* ---- the trace context ---------------------------------------------------------------------- */
const char *gw_traceparent(int *set, int *readonly) {
  SHELL_VAR *v = find_variable(GW_ENV_TRACEPARENT);
  int visible = v && v->value && !(v->attributes & att_invisible);
  if (set) *set = visible;
  if (readonly) *readonly = v && (v->attributes & att_readonly);
  return visible ? v->value : "";
}

void gw_export(const char *name, const char *value) {
  SHELL_VAR *v = bind_variable(name, (char *)value, 0);
  if (v && !(v->attributes & att_exported)) {
    v->attributes |= att_exported;
    array_needs_making = 1;
  }
}

void gw_span_id(char *buf, size_t n, const char *pfx, long ctr) {
  snprintf(buf, n, "%s%06ld", pfx, ctr % 1000000);
}

void gw_open_add(const char *sid) {
  SHELL_VAR *v = find_variable(GW_ENV_AUTO_OPEN);
  const char *old = v && v->value ? v->value : "";
  size_t m = strlen(old) + strlen(sid) + 2;
  char *nv = malloc(m);
  if (!nv) return;
  snprintf(nv, m, "%s,%s", old, sid);
  bind_variable(GW_ENV_AUTO_OPEN, nv, 0);
  free(nv);
}

int gw_strip_sid(char *open_list, const char *sid) {
  size_t nl = strlen(open_list), sl = strlen(sid);
  if (nl <= sl || open_list[nl - sl - 1] != ',' || strcmp(open_list + nl - sl, sid)) return 0;
  open_list[nl - sl - 1] = 0;
  return 1;
}

/* ---- the event log -------------------------------------------------------------------------- */
void gw_now(char *buf, size_t n) {
  struct timeval tv;
  gettimeofday(&tv, 0);
  snprintf(buf, n, "%ld.%06ld", (long)tv.tv_sec, (long)tv.tv_usec);
}

/* One append, as `printf ... >>"$_gwtrace_alog" || :` makes: a lost line is not an error here. */
void gw_emit(const char *line, size_t len) {
  const char *path = gw_sval(GW_V_EVENT_LOG);
  int fd;
  if (!path || !*path) return;
  /* O_NONBLOCK: never wait on a FIFO (gwtrace-auto.sh checked the path is an event log of ours) */
  fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0666);
  if (fd < 0) return;
  if (write(fd, line, len) < 0) { /* nothing to do: as the shell's `|| :` */ }
  close(fd);
}
