/* gwtrace-accel.c: the functions level's DEBUG-trap slow paths, as a bash loadable builtin.
 *
 * Why: at the `functions` level bash runs our DEBUG trap before every simple command. The trap's
 * text decides in a `case` whether anything changed (depth, subshell); when it did, a shell
 * function does the bookkeeping: a span begins when a function is entered and ends when it
 * returns. In bash that bookkeeping costs ~40 000 instructions a command with expansions and
 * ~65 us for a function call in a freshly forked subshell (docs/shim.md, rounds 12-14). Here the
 * common cases cost a few microseconds.
 *
 * Contract: this builtin is an accelerator, never a second implementation. It handles exactly
 * the cases of bash/gwtrace-auto-fn.sh's fast paths (_gwtrace_auto_dbg, _subenter, _enter,
 * _leave) and writes the same event lines and the same shell variables. For anything else it
 * changes nothing and calls the shell function `_gwtrace_auto_dbg` (with `$_`, as the trap does), so
 * the shell code stays the one home of every rule. It hands the script's `$?` and PIPESTATUS[0]
 * over in _gwtrace_arc and _gwtrace_aps, as the other trap texts do. Tests run with and
 * without it.
 *
 * ABI: bash exports its symbols to loadable builtins. We declare the few we use here rather than
 * build against bash's headers: these structures and functions are unchanged from bash 4.2 to
 * 5.2 except the ARRAY header, whose element count moved in 5.2 (see array_count). Loaded only
 * by gwtrace-auto-fn.sh, after a version check (GWTRACE_ACCEL=0 turns it off).
 *
 * Licence note: a loadable builtin runs inside bash (GPL-3.0-or-later); this file is offered
 * under the same terms.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

/* ---- bash's interface, as bash 4.2-5.2 export it ---------------------------------------- */
typedef intmax_t arrayind_t;
typedef struct word_desc { char *word; int flags; } WORD_DESC;
typedef struct word_list { struct word_list *next; WORD_DESC *word; } WORD_LIST;
typedef struct variable {
  char *name, *value, *exportstr;
  void *dynamic_value, *assign_func;
  int attributes, context;
} SHELL_VAR;
struct builtin {
  char *name;
  int (*function)(WORD_LIST *);
  int flags;
  char *const *long_doc;
  const char *short_doc;
  char *handle;
};
#define BUILTIN_ENABLED 0x01
#define att_exported 0x1
#define att_readonly 0x2
#define att_array 0x4
#define att_assoc 0x40
#define att_nameref 0x800
#define att_invisible 0x1000

extern SHELL_VAR *find_variable(const char *);
extern SHELL_VAR *find_function(const char *);
extern SHELL_VAR *bind_variable(const char *, char *, int);
extern char *array_reference(void *, arrayind_t);
extern int array_insert(void *, arrayind_t, char *);
extern char *assoc_reference(void *, char *);
extern int assoc_insert(void *, char *, char *);
extern int execute_shell_function(SHELL_VAR *, WORD_LIST *);
extern WORD_DESC *make_word(const char *);
extern WORD_LIST *make_word_list(WORD_DESC *, WORD_LIST *);
extern void dispose_words(WORD_LIST *);
extern int trap_builtin(WORD_LIST *);
extern int source_file(const char *, int);
extern int unbind_variable(const char *);
extern int line_number;
extern int subshell_level, echo_command_at_execute, array_needs_making;
extern char *the_printed_command_except_trap;

/* ---- reading and writing shell variables ------------------------------------------------- */
static int layout52 = -1; /* 1: bash >= 5.2's ARRAY header; 0: 4.2-5.1's; -1: not known yet */

static SHELL_VAR *plain(const char *name, int want) {
  SHELL_VAR *v = find_variable(name);
  if (!v || (v->attributes & (att_invisible | att_nameref)) ||
      (v->attributes & (att_array | att_assoc)) != want)
    return 0;
  return v;
}

static const char *sval(const char *name) {
  SHELL_VAR *v = plain(name, 0);
  return v && v->value ? v->value : 0;
}

static long ival(const char *name, int *ok) {
  const char *s = sval(name);
  char *end;
  long n;
  if (!s || !*s) { *ok = 0; return 0; }
  n = strtol(s, &end, 10);
  if (*end) *ok = 0;
  return n;
}

/* A private scalar: replaced in place (no attributes, not exported), as an assignment would. */
static int sset(const char *name, const char *value) {
  SHELL_VAR *v = plain(name, 0);
  char *copy;
  if (!v || (v->attributes & (att_readonly | att_exported))) return 0;
  copy = strdup(value);
  if (!copy) return 0;
  free(v->value);
  v->value = copy;
  return 1;
}

static int iset(const char *name, long n) {
  char buf[32];
  snprintf(buf, sizeof buf, "%ld", n);
  return sset(name, buf);
}

static void *array_of(const char *name) {
  SHELL_VAR *v = plain(name, att_array);
  return v ? v->value : 0;
}

static int bash52(void) {
  SHELL_VAR *vi = find_variable("BASH_VERSINFO");
  const char *ma = vi ? array_reference(vi->value, 0) : 0, *mi = vi ? array_reference(vi->value, 1) : 0;
  return ma && mi && (atoi(ma) > 5 || (atoi(ma) == 5 && atoi(mi) >= 2));
}

static long array_count(void *a) {
  if (layout52 > 0) return (long)*(arrayind_t *)((char *)a + sizeof(arrayind_t));
  return (long)*(int *)((char *)a + 2 * sizeof(arrayind_t)); /* after the type and max_index */
}

static const char *aref(const char *name, long i) {
  void *a = array_of(name);
  char *s = a ? array_reference(a, i) : 0;
  return s ? s : "";
}

static int aset(const char *name, long i, const char *value) {
  void *a = array_of(name);
  return a && array_insert(a, i, (char *)value) >= 0;
}

/* ---- the event log -------------------------------------------------------------------------- */
static void now(char *buf, size_t n) {
  struct timeval tv;
  gettimeofday(&tv, 0);
  snprintf(buf, n, "%ld.%06ld", (long)tv.tv_sec, (long)tv.tv_usec);
}

/* One append, as `printf ... >>"$_gwtrace_alog" || :` makes: a lost line is not an error here. */
static void emit(const char *line, size_t len) {
  const char *path = sval("_gwtrace_alog");
  int fd;
  if (!path || !*path) return;
  fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return;
  if (write(fd, line, len) < 0) { /* nothing to do: as the shell's `|| :` */ }
  close(fd);
}

/* ---- the cases handled here ------------------------------------------------------------------ */
enum { DONE = 0, SHELL = 1 };

static int starts_special(const char *cmd) {
  /* the `case` patterns' complement: [sbc.][ehuo ]* may be source, ., set, shopt, builtin, command */
  return cmd[0] && strchr("sbc.", cmd[0]) && cmd[1] && strchr("ehuo ", cmd[1]);
}

static int needs_shell_word(const char *cmd) {
  static const char *const words[] = {"set", "shopt", "builtin", "command", "source", ".", 0};
  size_t n = strcspn(cmd, " ");
  int i;
  for (i = 0; words[i]; i++)
    if (strlen(words[i]) == n && strncmp(cmd, words[i], n) == 0) return 1;
  return 0;
}

/* _gwtrace_auto_seed's common case: this process's span ids from the kernel's uuid. */
static int seed(long pid) {
  char u[64], hex[13];
  int fd, ok = 1;
  ssize_t n;
  unsigned long long r;
  const char *rp = sval("_gwtrace_arngpid");
  if (rp && *rp && atol(rp) == pid) return 1;
  fd = open("/proc/sys/kernel/random/uuid", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  n = read(fd, u, sizeof u - 1);
  close(fd);
  if (n < 36) return 0;
  memcpy(hex, u + 24, 12);
  hex[12] = 0;
  if (strspn(hex, "0123456789abcdef") != 12) return 0;
  r = strtoull(hex, 0, 16) ^ ((unsigned long long)pid << 48);
  {
    char pfx[11], num[32];
    memcpy(pfx, hex, 10);
    pfx[10] = 0;
    snprintf(num, sizeof num, "%lld", (long long)r);
    ok = sset("_gwtrace_apfx", pfx) && sset("_gwtrace_actr", "1000000") && iset("_gwtrace_arngpid", pid) &&
         sset("_gwtrace_arng", num);
  }
  return ok;
}

/* _gwtrace_auto_subenter for a function: this subshell gets our EXIT trap (note 6) and ids. */
static int subshell_function(long pid) {
  SHELL_VAR *open_ = find_variable("GWTRACE_AUTO_OPEN");
  const char *atr = sval("_gwtrace_atr"), *exit1 = sval("_gwtrace_aexit1");
  char buf[96];
  WORD_LIST *w;
  if (!open_ || !atr || !exit1 || (open_->attributes & (att_readonly | att_invisible)) ||
      !(open_->attributes & att_exported) || (open_->attributes & (att_array | att_assoc)))
    return SHELL;
  if (!seed(pid)) return SHELL; /* _gwtrace_auto_seed's slow path: all of it in the shell */
  iset("_gwtrace_asl", subshell_level);
  iset("_gwtrace_asub", pid);
  w = make_word_list(make_word("--"), make_word_list(make_word(exit1), make_word_list(make_word("EXIT"), 0)));
  trap_builtin(w);
  dispose_words(w);
  snprintf(buf, sizeof buf, "%ld:%s", pid, atr);
  bind_variable("GWTRACE_AUTO_OPEN", buf, 0);
  iset("_gwtrace_aown", pid);
  return DONE;
}

/* _gwtrace_auto_subenter: a new subshell's first command. Only the subshell level changes,
 * unless the command calls a function. */
static int subshell_first(const char *cmd, long depth, long ad, int *same_key) {
  char word[256];
  size_t n = strcspn(cmd, " ");
  SHELL_VAR *fnv = plain("_gwtrace_afn", att_assoc);
  *same_key = 0;
  if (!fnv) return SHELL;
  if (n == 0) return iset("_gwtrace_asl", subshell_level) ? DONE : SHELL;
  if (n >= sizeof word) return SHELL;
  memcpy(word, cmd, n);
  word[n] = 0;
  if (!assoc_reference(fnv->value, word) && (strchr(word, '/') || strchr(word, '=') || !find_function(word))) {
    if (depth == ad && !starts_special(cmd)) *same_key = 1;
    return iset("_gwtrace_asl", subshell_level) ? DONE : SHELL;
  }
  return subshell_function((long)getpid());
}

static int enter(long depth, long ad) {
  const char *w, *tp, *aexp, *acur, *pfx, *site_src, *ln;
  char sid[32], tpbuf[80], ts[40], line[2048], *site;
  size_t site_len;
  SHELL_VAR *fnv, *tpv;
  long an, actr;
  int ok = 1, len;
  void *fa = array_of("FUNCNAME");
  w = fa ? array_reference(fa, 0) : 0;
  if (!w) w = "";
  if (!strcmp(w, "source") || !strcmp(w, "trap") || !strcmp(w, "exit") ||
      !strncmp(w, "_gwtrace_", 9) || !strncmp(w, "trace_", 6) || strpbrk(w, "\\\t\n\r"))
    return SHELL;
  an = ival("_gwtrace_an", &ok);
  actr = ival("_gwtrace_actr", &ok);
  if (!ok || an < 1 || depth != ad + 1 || atol(aref("_gwtrace_adep", an - 1)) >= depth || actr + 1 >= 2000000)
    return SHELL;
  tpv = find_variable("TRACEPARENT");
  tp = tpv && tpv->value && !(tpv->attributes & att_invisible) ? tpv->value : "";
  aexp = sval("_gwtrace_aexp");
  pfx = sval("_gwtrace_apfx");
  if (!aexp || !pfx || strcmp(tp, aexp) || getpid() != ival("_gwtrace_aown", &ok) || !ok)
    return SHELL;
  if (tpv && (tpv->attributes & att_readonly)) return SHELL;
  fnv = plain("_gwtrace_afn", att_assoc);
  if (!fnv) return SHELL;
  actr += 1;
  snprintf(sid, sizeof sid, "%s%06ld", pfx, actr % 1000000);
  acur = sval("_gwtrace_acur");
  if (!acur) acur = "";
  now(ts, sizeof ts);
  len = snprintf(line, sizeof line, "gw1\tB\t%s\t%ld\t%s\t%s\t%s\t0\t%s\t%s\t%s\n", ts, (long)getpid(),
                 sval("_gwtrace_atr") ? sval("_gwtrace_atr") : "", sid, *acur ? acur : "-",
                 sval("_gwtrace_afl") ? sval("_gwtrace_afl") : "",
                 sval("_gwtrace_ats") && *sval("_gwtrace_ats") ? sval("_gwtrace_ats") : "-", w);
  if (len < 0 || (size_t)len >= sizeof line) return SHELL;
  site_src = aref("BASH_SOURCE", 1);
  ln = aref("BASH_LINENO", 0);
  site_len = strlen(ln) + strlen(w) + strlen(site_src) + 3;
  site = malloc(site_len);
  if (!site) return SHELL;
  snprintf(site, site_len, "%s %s %s", ln, w, site_src);
  emit(line, (size_t)len);
  snprintf(tpbuf, sizeof tpbuf, "00-%s-%s-%s", sval("_gwtrace_atr"), sid, sval("_gwtrace_afl"));
  aset("_gwtrace_apar", an, acur);
  aset("_gwtrace_asp", an, sid);
  {
    char d[32];
    snprintf(d, sizeof d, "%ld", depth);
    aset("_gwtrace_adep", an, d);
    snprintf(d, sizeof d, "%ld", (long)getpid());
    aset("_gwtrace_apid", an, d);
  }
  aset("_gwtrace_aname", an, w);
  {
    char *key = strdup(w);
    if (key) assoc_insert(fnv->value, key, "1");
  }
  aset("_gwtrace_asite", an, site);
  free(site);
  aset("_gwtrace_aotp", an, aexp);
  aset("_gwtrace_aotpset", an, tpv && tpv->value && !(tpv->attributes & att_invisible) ? "1" : "");
  iset("_gwtrace_an", an + 1);
  iset("_gwtrace_ad", depth);
  sset("_gwtrace_acur", sid);
  {
    char ctr[32];
    snprintf(ctr, sizeof ctr, "%ld", actr);
    sset("_gwtrace_actr", ctr);
  }
  sset("_gwtrace_aexp", tpbuf);
  {
    const char *open_ = find_variable("GWTRACE_AUTO_OPEN") ? find_variable("GWTRACE_AUTO_OPEN")->value : 0;
    size_t m = (open_ ? strlen(open_) : 0) + strlen(sid) + 2;
    char *nv = malloc(m);
    if (nv) {
      snprintf(nv, m, "%s,%s", open_ ? open_ : "", sid);
      bind_variable("GWTRACE_AUTO_OPEN", nv, 0);
      free(nv);
    }
  }
  bind_variable("TRACEPARENT", tpbuf, 0);
  return DONE;
}

static int leave(long depth, int rc, int ps) {
  char ts[40], buf[4096], line[512];
  size_t used = 0;
  int ended = 0;
  const char *tp, *aexp, *atr;
  SHELL_VAR *tpv;
  long an, di, k, pid = (long)getpid();
  int ok = 1;
  tpv = find_variable("TRACEPARENT");
  tp = tpv && tpv->value && !(tpv->attributes & att_invisible) ? tpv->value : "";
  aexp = sval("_gwtrace_aexp");
  atr = sval("_gwtrace_atr");
  an = ival("_gwtrace_an", &ok);
  if (!ok || !aexp || !atr || strcmp(tp, aexp) || pid != ival("_gwtrace_aown", &ok) || !ok) return SHELL;
  if (rc || ps) return SHELL; /* a status to judge: _gwtrace_auto_leave_status */
  if (tpv && (tpv->attributes & att_readonly)) return SHELL;
  /* check every frame this return ends before changing anything */
  for (k = an - 1; k > 0 && atol(aref("_gwtrace_adep", k)) > depth; k--) {
    const char *sp = aref("_gwtrace_asp", k);
    if (*sp && (!*aref("_gwtrace_aotpset", k) || atol(aref("_gwtrace_apid", k)) != pid)) return SHELL;
  }
  if (atol(aref("_gwtrace_adep", k)) < depth) return SHELL; /* _gwtrace_auto_sync */
  now(ts, sizeof ts);
  {
    const char *open_ = find_variable("GWTRACE_AUTO_OPEN") ? find_variable("GWTRACE_AUTO_OPEN")->value : "";
    char *nopen = strdup(open_ ? open_ : "");
    const char *cur = sval("_gwtrace_acur"), *exp = aexp;
    char *keep_cur = strdup(cur ? cur : ""), *keep_exp = strdup(exp);
    if (!nopen || !keep_cur || !keep_exp) { free(nopen); free(keep_cur); free(keep_exp); return SHELL; }
    for (di = an - 1; di > 0 && atol(aref("_gwtrace_adep", di)) > depth; di--) {
      const char *sp = aref("_gwtrace_asp", di);
      if (*sp) {
        size_t nl = strlen(nopen), sl = strlen(sp);
        int n = snprintf(line, sizeof line, "gw1\tE\t%s\t%ld\t%s\t%s\t0\n", ts, pid, atr, sp);
        if (n > 0 && (size_t)n < sizeof line) {
          if (used + (size_t)n > sizeof buf) { emit(buf, used); used = 0; }   /* many frames at once */
          memcpy(buf + used, line, (size_t)n);
          used += (size_t)n;
        }
        ended = 1;
        if (nl > sl && nopen[nl - sl - 1] == ',' && !strcmp(nopen + nl - sl, sp)) nopen[nl - sl - 1] = 0;
        free(keep_exp);
        keep_exp = strdup(aref("_gwtrace_aotp", di));
        free(keep_cur);
        keep_cur = strdup(aref("_gwtrace_apar", di));
        if (!keep_exp || !keep_cur) break;
      }
      an = di;
    }
    iset("_gwtrace_an", an);
    sset("_gwtrace_ast", "0");
    if (used) emit(buf, used);
    if (ended) { /* a span ended: the context goes back to its parent's, as the shell assigns it */
      if (keep_exp) sset("_gwtrace_aexp", keep_exp);
      if (keep_cur) sset("_gwtrace_acur", keep_cur);
      bind_variable("GWTRACE_AUTO_OPEN", nopen, 0);
      if (keep_exp) bind_variable("TRACEPARENT", keep_exp, 0);
    }
    free(nopen);
    free(keep_cur);
    free(keep_exp);
  }
  iset("_gwtrace_ad", depth);
  return DONE;
}

static int decide(int rc) {
  const char *cmd = the_printed_command_except_trap ? the_printed_command_except_trap : "";
  const char *mode;
  void *src = array_of("BASH_SOURCE");
  long depth, ad, asl;
  int ok = 1, same_key = 0, ps;

  if (ival("_gwtrace_abusy", &ok) != 0 || !ok) return ok ? DONE : SHELL;
  if (!src) return SHELL;
  depth = array_count(src);
  ad = ival("_gwtrace_ad", &ok);
  asl = ival("_gwtrace_asl", &ok);
  if (!ok) return SHELL;
  if (depth == ad && subshell_level == asl && cmd[0] && !starts_special(cmd)) return DONE;

  mode = sval("_gwtrace_amode");
  if (echo_command_at_execute || !mode || *mode || needs_shell_word(cmd)) return SHELL;
  ps = atoi(aref("PIPESTATUS", 0));
  if (subshell_level != asl) {
    if (subshell_first(cmd, depth, ad, &same_key) == SHELL) return SHELL;
    if (same_key) return DONE;
  }
  if (depth > ad) return enter(depth, ad);
  if (depth < ad) return leave(depth, rc, ps);
  return DONE;
}

static int gwtrace_adbgc_builtin(WORD_LIST *list) {
  int rc = 0;
  SHELL_VAR *fn;
  WORD_LIST *args;
  const char *last;
  extern int last_command_exit_value;
  if (layout52 < 0) layout52 = bash52();
  rc = last_command_exit_value;
  if (decide(rc) == DONE) return 0;
  /* The shell code, with the script's $? and PIPESTATUS[0] handed over as the `case` text's
   * callers do (a second argument: they are in _gwtrace_arc and _gwtrace_aps already). */
  fn = find_function("_gwtrace_auto_dbg");
  if (!fn || !iset("_gwtrace_arc", rc) || !sset("_gwtrace_aps", aref("PIPESTATUS", 0))) return 0;
  last = list ? list->word->word : "";
  args = make_word_list(make_word("_gwtrace_auto_dbg"),
                        make_word_list(make_word(last), make_word_list(make_word(last), 0)));
  execute_shell_function(fn, args);
  dispose_words(args);
  return 0;
}

static char *gwtrace_adbgc_doc[] = {"gwtrace's DEBUG trap for the functions level (internal).", 0};

struct builtin _gwtrace_adbgc_struct = {
    "_gwtrace_adbgc", gwtrace_adbgc_builtin, BUILTIN_ENABLED, gwtrace_adbgc_doc, "_gwtrace_adbgc [word]", 0,
};

/* ==== the scripts level: spans for the functions a script calls from its top level ========== */
/* gwtrace-auto-top.sh's common cases (its notes 1-3): the DEBUG trap runs without functrace, for
 * the script's top-level commands only. A command word is classified once (_gwtrace_atw: "=" not
 * a function, 1 a function to trace); a call begins a span that the next top-level command ends
 * with status 0, or the exit with its status (`_gwtrace_atopc --end STATUS`). A non-zero status to
 * judge, or ids to draw from the kernel, go to the shell code: gwtrace-auto-top.sh, read then. */

static int top_classify(const char *w, SHELL_VAR *cache) {
  const char *known = assoc_reference(cache->value, (char *)w);
  char *key;
  int traced;
  if (known) return known[0] == '1';
  traced = !strchr(w, '=') && find_function(w) && strncmp(w, "_gwtrace_", 9) && strncmp(w, "trace_", 6) &&
           strncmp(w, "gwtrace_", 8) && strcmp(w, "trap") && strcmp(w, "exit") && !strpbrk(w, "\\\t\n\r");
  key = strdup(w);
  if (key) assoc_insert(cache->value, key, traced ? "1" : "=");
  return traced;
}

static int tp_readonly(void) {
  SHELL_VAR *tpv = find_variable("TRACEPARENT");
  return tpv && (tpv->attributes & att_readonly);
}

/* _gwtrace_auto_top_end with a known status: the end line, GWTRACE_AUTO_OPEN, TRACEPARENT back. */
static void top_end(const char *status) {
  const char *sp = sval("_gwtrace_atsp"), *atr = sval("_gwtrace_atr");
  SHELL_VAR *open_ = find_variable("GWTRACE_AUTO_OPEN");
  char ts[40], line[512];
  int n;
  if (!sp || !*sp || !atr) return;
  now(ts, sizeof ts);
  n = snprintf(line, sizeof line, "gw1\tE\t%s\t%ld\t%s\t%s\t%s\n", ts, (long)getpid(), atr, sp, status);
  if (n > 0 && (size_t)n < sizeof line) emit(line, (size_t)n);
  if (open_ && open_->value && !(open_->attributes & (att_readonly | att_array | att_assoc))) {
    size_t nl = strlen(open_->value), sl = strlen(sp);
    if (nl > sl && open_->value[nl - sl - 1] == ',' && !strcmp(open_->value + nl - sl, sp)) {
      char *nv = strdup(open_->value);
      if (nv) {
        nv[nl - sl - 1] = 0;
        bind_variable("GWTRACE_AUTO_OPEN", nv, 0);
        free(nv);
      }
    }
  }
  sset("_gwtrace_atsp", "");
  if (tp_readonly()) return;
  if (*(sval("_gwtrace_atotpset") ? sval("_gwtrace_atotpset") : "")) {
    SHELL_VAR *v = bind_variable("TRACEPARENT", (char *)(sval("_gwtrace_atotp") ? sval("_gwtrace_atotp") : ""), 0);
    if (v && !(v->attributes & att_exported)) { v->attributes |= att_exported; array_needs_making = 1; }
  } else {
    unbind_variable("TRACEPARENT");
  }
}

/* _gwtrace_auto_top_begin's common case: an id from the process's prefix and counter. */
static int top_begin(const char *w) {
  const char *pfx = sval("_gwtrace_apfx"), *atr = sval("_gwtrace_atr"), *afl = sval("_gwtrace_afl"),
             *ats = sval("_gwtrace_ats"), *amain = sval("_gwtrace_amain"), *open_;
  SHELL_VAR *tpv = find_variable("TRACEPARENT"), *ov = find_variable("GWTRACE_AUTO_OPEN");
  char sid[32], ts[40], lbuf[32], tpbuf[80], line[2048];
  long actr;
  int ok = 1, n, set;
  actr = ival("_gwtrace_actr", &ok);
  if (!ok || !pfx || !*pfx || !atr || !afl || !amain || actr + 1 >= 2000000) return SHELL;
  now(ts, sizeof ts);
  snprintf(sid, sizeof sid, "%s%06ld", pfx, (actr + 1) % 1000000);
  n = snprintf(line, sizeof line, "gw1\tB\t%s\t%ld\t%s\t%s\t%s\t%s\t%s\t%s\t%s\tgwtrace.kind=function\n", ts,
               (long)getpid(), atr, sid, sval("_gwtrace_asp0") ? sval("_gwtrace_asp0") : "",
               sval("_gwtrace_aprem") ? sval("_gwtrace_aprem") : "0", afl, ats && *ats ? ats : "-", w);
  if (n < 0 || (size_t)n >= sizeof line) return SHELL;
  set = tpv && tpv->value && !(tpv->attributes & att_invisible);
  snprintf(lbuf, sizeof lbuf, "%d", line_number);
  iset("_gwtrace_actr", actr + 1);
  sset("_gwtrace_atsp", sid);
  sset("_gwtrace_atl", lbuf);
  sset("_gwtrace_atn", w);
  sset("_gwtrace_atotp", set ? tpv->value : "");
  sset("_gwtrace_atotpset", set ? "1" : "");
  emit(line, (size_t)n);
  open_ = ov && ov->value ? ov->value : "";
  if (ov && !(ov->attributes & (att_readonly | att_array | att_assoc)) && !strncmp(open_, amain, strlen(amain)) &&
      open_[strlen(amain)] == ':') {
    size_t m = strlen(open_) + strlen(sid) + 2;
    char *nv = malloc(m);
    if (nv) {
      snprintf(nv, m, "%s,%s", open_, sid);
      bind_variable("GWTRACE_AUTO_OPEN", nv, 0);
      free(nv);
    }
  }
  if (!tp_readonly()) {
    SHELL_VAR *v;
    snprintf(tpbuf, sizeof tpbuf, "00-%s-%s-%s", atr, sid, afl);
    v = bind_variable("TRACEPARENT", tpbuf, 0);
    if (v && !(v->attributes & att_exported)) { v->attributes |= att_exported; array_needs_making = 1; }
  }
  return DONE;
}

/* The shell code, read now: gwtrace-auto-top.sh's _gwtrace_auto_top with the script's $? and
 * PIPESTATUS[0] handed over as arguments (it reads them itself when the trap calls it). */
static int top_shell(const char *last, int rc, const char *ps) {
  SHELL_VAR *fn = find_function("_gwtrace_auto_top");
  char rcs[16], path[4096];
  WORD_LIST *args;
  if (!fn) {
    const char *dir = sval("_gwtrace_adir");
    if (!dir || (size_t)snprintf(path, sizeof path, "%s/gwtrace-auto-top.sh", dir) >= sizeof path) return 0;
    source_file(path, 0);
    fn = find_function("_gwtrace_auto_top");
    if (!fn) return 0;
  }
  snprintf(rcs, sizeof rcs, "%d", rc);
  args = make_word_list(make_word("_gwtrace_auto_top"),
                        make_word_list(make_word(last), make_word_list(make_word(rcs), make_word_list(make_word(ps), 0))));
  execute_shell_function(fn, args);
  dispose_words(args);
  return 0;
}

static int gwtrace_atopc_builtin(WORD_LIST *list) {
  extern int last_command_exit_value;
  int rc = last_command_exit_value, ok = 1;
  const char *cmd = the_printed_command_except_trap ? the_printed_command_except_trap : "";
  const char *atsp = sval("_gwtrace_atsp"), *atop = sval("_gwtrace_atop"), *amain = sval("_gwtrace_amain");
  const char *last = list ? list->word->word : "";
  SHELL_VAR *cache = plain("_gwtrace_atw", att_assoc);
  char w[256], ps[24];   /* a copy: reading gwtrace-auto-top.sh replaces PIPESTATUS's elements */
  size_t n = strcspn(cmd, " ");
  void *src;

  if (list && !strcmp(list->word->word, "--end")) {          /* the exit, or the script's own DEBUG trap */
    top_end(list->next ? list->next->word->word : "0");
    return 0;
  }
  snprintf(ps, sizeof ps, "%s", aref("PIPESTATUS", 0));
  if (!cache || n >= sizeof w) return top_shell(last, rc, ps);
  memcpy(w, cmd, n);
  w[n] = 0;
  if ((!atsp || !*atsp)) {                                    /* the `case` text's fast path */
    const char *known = assoc_reference(cache->value, w);
    if (known ? strchr(known, '=') != 0 : strchr(w, '=') != 0) return 0;
  }
  if (!amain || atol(amain) != (long)getpid() || !atop || !*atop || ival("_gwtrace_abusy", &ok) != 0 || !ok) return 0;
  if (!*w) return 0;
  {
    int traced = top_classify(w, cache);
    src = array_of("BASH_SOURCE");
    if (!src) return top_shell(last, rc, ps);
    if (layout52 < 0) layout52 = bash52();
    if (array_count(src) != 1) return 0;
    if (atsp && *atsp) {
      if (rc || atoi(ps)) return top_shell(last, rc, ps);   /* a status to judge */
      top_end("0");
    }
    if (traced && top_begin(w) == SHELL) return top_shell(last, rc, ps);
  }
  return 0;
}

static char *gwtrace_atopc_doc[] = {"gwtrace's DEBUG trap for the scripts level (internal).", 0};

struct builtin _gwtrace_atopc_struct = {
    "_gwtrace_atopc", gwtrace_atopc_builtin, BUILTIN_ENABLED, gwtrace_atopc_doc, "_gwtrace_atopc [word | --end status]", 0,
};
