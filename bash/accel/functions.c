/* functions.c: the functions level's DEBUG-trap slow paths, as a bash loadable builtin.
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
 * The accelerator is this file, scripts.c (the scripts level), shellvars.c and probe.c, built into one
 * bash/gwtrace-accel.so (`make accel`); bash_abi.h says what of bash they use. Loaded by
 * gwtrace-auto-fn.sh from the copy the load check verified for the bash binary (probe.c; GWTRACE_ACCEL=0
 * turns it off).
 *
 * Licence note: a loadable builtin runs inside bash (GPL-3.0-or-later); the files of bash/accel/
 * are offered under the same terms.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shellvars.h"

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
  const char *rp = gw_sval(GW_V_RNG_PID);
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
    ok = gw_sset(GW_V_ID_PREFIX, pfx) && gw_sset(GW_V_ID_COUNTER, "1000000") && gw_iset(GW_V_RNG_PID, pid) &&
         gw_sset(GW_V_RNG_STATE, num);
  }
  return ok;
}

/* BASH_VERSINFO as 100 * major + minor (404 for bash 4.4), read once. */
static long gw_version(void) {
  static long v = -1;
  if (v < 0) {
    SHELL_VAR *vi = find_variable(GW_BASH_VERSINFO);
    const char *ma = vi ? array_reference(vi->value, 0) : 0, *mi = vi ? array_reference(vi->value, 1) : 0;
    v = ma && mi ? atol(ma) * 100 + atol(mi) : 0;
  }
  return v;
}

/* _gwtrace_auto_subenter for a function: this subshell gets our EXIT trap (note 6) and ids.
 * Bash < 5.2: the shell's (_gwtrace_auto_subold, note 14: traps put back, a pipeline element's RETURN trap). */
static int subshell_function(long pid) {
  SHELL_VAR *open_ = find_variable(GW_ENV_AUTO_OPEN);
  const char *atr = gw_sval(GW_V_TRACE_ID), *exit1 = gw_sval(GW_V_SUBSHELL_EXIT_TRAP);
  char buf[96];
  WORD_LIST *w;
  /* bash < 5.2: a pipeline element's function ends in the shell code's RETURN trap (note 14), and
   * bash < 4.4 frees every trap string when a subshell first sets a trap: the shell code sets the
   * DEBUG trap and the script's ERR and RETURN traps again (_gwtrace_auto_retrap) */
  if (gw_version() < 502) return SHELL;
  if (!open_ || !atr || !exit1 || (open_->attributes & (att_readonly | att_invisible)) ||
      !(open_->attributes & att_exported) || (open_->attributes & (att_array | att_assoc)))
    return SHELL;
  if (!seed(pid)) return SHELL; /* _gwtrace_auto_seed's slow path: all of it in the shell */
  gw_iset(GW_V_SUBSHELL, subshell_level);
  gw_iset(GW_V_SUBSHELL_PID, pid);
  w = make_word_list(make_word("--"), make_word_list(make_word(exit1), make_word_list(make_word("EXIT"), 0)));
  trap_builtin(w);
  dispose_words(w);
  snprintf(buf, sizeof buf, "%ld:%s", pid, atr);
  bind_variable(GW_ENV_AUTO_OPEN, buf, 0);
  gw_iset(GW_V_OWNER_PID, pid);
  return DONE;
}

/* _gwtrace_auto_subenter: a new subshell's first command. Only the subshell level changes,
 * unless the command calls a function. */
static int subshell_first(const char *cmd, long depth, long ad, int *same_key) {
  char word[256];
  size_t n = strcspn(cmd, " ");
  SHELL_VAR *fnv = gw_plain(GW_V_FUNCTIONS_SEEN, att_assoc);
  *same_key = 0;
  if (!fnv) return SHELL;
  if (n == 0) return gw_iset(GW_V_SUBSHELL, subshell_level) ? DONE : SHELL;
  if (n >= sizeof word) return SHELL;
  memcpy(word, cmd, n);
  word[n] = 0;
  if (!assoc_reference(fnv->value, word) && (strchr(word, '/') || strchr(word, '=') || !find_function(word))) {
    if (depth == ad && !starts_special(cmd)) *same_key = 1;
    return gw_iset(GW_V_SUBSHELL, subshell_level) ? DONE : SHELL;
  }
  return subshell_function((long)getpid());
}

static int enter(long depth, long ad) {
  const char *w, *tp, *aexp, *acur, *pfx, *site_src, *ln, *atr, *afl, *ats;
  char sid[32], tpbuf[80], ts[40], line[2048], *site;
  size_t site_len;
  SHELL_VAR *fnv;
  long an, actr;
  int ok = 1, len, tp_set, tp_ro;
  void *fa = gw_array_of(GW_BASH_FUNCNAME);
  w = fa ? array_reference(fa, 0) : 0;
  if (!w) w = "";
  if (!strcmp(w, "source") || !strcmp(w, "trap") || !strcmp(w, "exit") ||
      GW_HAS_PREFIX(w, GW_PREFIX_INTERNAL) || GW_HAS_PREFIX(w, GW_PREFIX_LIBRARY) || strpbrk(w, "\\\t\n\r"))
    return SHELL;
  an = gw_ival(GW_V_FRAMES, &ok);
  actr = gw_ival(GW_V_ID_COUNTER, &ok);
  if (!ok || an < 1 || depth != ad + 1 || atol(gw_aref(GW_V_FRAME_DEPTH, an - 1)) >= depth || actr + 1 >= 2000000)
    return SHELL;
  tp = gw_traceparent(&tp_set, &tp_ro);
  aexp = gw_sval(GW_V_EXPORTED_TP);
  pfx = gw_sval(GW_V_ID_PREFIX);
  atr = gw_sval(GW_V_TRACE_ID);
  afl = gw_sval(GW_V_FLAGS);
  ats = gw_sval(GW_V_TRACESTATE);
  if (!aexp || !pfx || !atr || !afl || strcmp(tp, aexp) || getpid() != gw_ival(GW_V_OWNER_PID, &ok) || !ok)
    return SHELL;
  if (tp_ro) return SHELL;
  fnv = gw_plain(GW_V_FUNCTIONS_SEEN, att_assoc);
  if (!fnv) return SHELL;
  actr += 1;
  gw_span_id(sid, sizeof sid, pfx, actr);
  acur = gw_sval(GW_V_CURRENT_SPAN);
  if (!acur) acur = "";
  gw_now(ts, sizeof ts);
  len = snprintf(line, sizeof line, "gw1\tB\t%s\t%ld\t%s\t%s\t%s\t0\t%s\t%s\t%s\n", ts, (long)getpid(), atr, sid,
                 *acur ? acur : "-", afl, ats && *ats ? ats : "-", w);
  if (len < 0 || (size_t)len >= sizeof line) return SHELL;
  site_src = gw_aref(GW_BASH_SOURCE, 1);
  ln = gw_aref(GW_BASH_LINENO, 0);
  site_len = strlen(ln) + strlen(w) + strlen(site_src) + 3;
  site = malloc(site_len);
  if (!site) return SHELL;
  snprintf(site, site_len, "%s %s %s", ln, w, site_src);
  gw_emit(line, (size_t)len);
  snprintf(tpbuf, sizeof tpbuf, "00-%s-%s-%s", atr, sid, afl);
  gw_aset(GW_V_FRAME_PARENT, an, acur);
  gw_aset(GW_V_FRAME_SPAN, an, sid);
  {
    char d[32];
    snprintf(d, sizeof d, "%ld", depth);
    gw_aset(GW_V_FRAME_DEPTH, an, d);
    snprintf(d, sizeof d, "%ld", (long)getpid());
    gw_aset(GW_V_FRAME_PID, an, d);
  }
  gw_aset(GW_V_FRAME_NAME, an, w);
  if (!assoc_reference(fnv->value, (char *)w)) { /* only a new key: bash 4.2 keeps the key it is given */
    char *key = strdup(w);
    if (key) assoc_insert(fnv->value, key, "1");
  }
  gw_aset(GW_V_FRAME_SITE, an, site);
  free(site);
  gw_aset(GW_V_FRAME_OLD_TP, an, aexp);
  gw_aset(GW_V_FRAME_OLD_TP_SET, an, tp_set ? "1" : "");
  gw_iset(GW_V_FRAMES, an + 1);
  gw_iset(GW_V_DEPTH, depth);
  gw_sset(GW_V_CURRENT_SPAN, sid);
  {
    char ctr[32];
    snprintf(ctr, sizeof ctr, "%ld", actr);
    gw_sset(GW_V_ID_COUNTER, ctr);
  }
  gw_sset(GW_V_EXPORTED_TP, tpbuf);
  gw_open_add(sid);
  bind_variable(GW_ENV_TRACEPARENT, tpbuf, 0);
  return DONE;
}

static int leave(long depth, int rc, int ps) {
  char ts[40], buf[4096], line[512];
  size_t used = 0;
  int ended = 0;
  const char *tp, *aexp, *atr;
  long an, di, k, pid = (long)getpid();
  int ok = 1, tp_ro;
  tp = gw_traceparent(0, &tp_ro);
  aexp = gw_sval(GW_V_EXPORTED_TP);
  atr = gw_sval(GW_V_TRACE_ID);
  an = gw_ival(GW_V_FRAMES, &ok);
  if (!ok || !aexp || !atr || strcmp(tp, aexp) || pid != gw_ival(GW_V_OWNER_PID, &ok) || !ok) return SHELL;
  if (rc || ps) return SHELL; /* a status to judge: _gwtrace_auto_leave_status */
  if (tp_ro) return SHELL;
  /* check every frame this return ends before changing anything */
  for (k = an - 1; k > 0 && atol(gw_aref(GW_V_FRAME_DEPTH, k)) > depth; k--) {
    const char *sp = gw_aref(GW_V_FRAME_SPAN, k);
    if (*sp && (!*gw_aref(GW_V_FRAME_OLD_TP_SET, k) || atol(gw_aref(GW_V_FRAME_PID, k)) != pid)) return SHELL;
  }
  if (atol(gw_aref(GW_V_FRAME_DEPTH, k)) < depth) return SHELL; /* _gwtrace_auto_sync */
  gw_now(ts, sizeof ts);
  {
    const char *open_ = find_variable(GW_ENV_AUTO_OPEN) ? find_variable(GW_ENV_AUTO_OPEN)->value : "";
    char *nopen = strdup(open_ ? open_ : "");
    const char *cur = gw_sval(GW_V_CURRENT_SPAN), *exp = aexp;
    char *keep_cur = strdup(cur ? cur : ""), *keep_exp = strdup(exp);
    if (!nopen || !keep_cur || !keep_exp) { free(nopen); free(keep_cur); free(keep_exp); return SHELL; }
    for (di = an - 1; di > 0 && atol(gw_aref(GW_V_FRAME_DEPTH, di)) > depth; di--) {
      const char *sp = gw_aref(GW_V_FRAME_SPAN, di);
      if (*sp) {
        int n = snprintf(line, sizeof line, "gw1\tE\t%s\t%ld\t%s\t%s\t0\n", ts, pid, atr, sp);
        if (n > 0 && (size_t)n < sizeof line) {
          if (used + (size_t)n > sizeof buf) { gw_emit(buf, used); used = 0; }   /* many frames at once */
          memcpy(buf + used, line, (size_t)n);
          used += (size_t)n;
        }
        ended = 1;
        gw_strip_sid(nopen, sp);
        free(keep_exp);
        keep_exp = strdup(gw_aref(GW_V_FRAME_OLD_TP, di));
        free(keep_cur);
        keep_cur = strdup(gw_aref(GW_V_FRAME_PARENT, di));
        if (!keep_exp || !keep_cur) break;
      }
      an = di;
    }
    gw_iset(GW_V_FRAMES, an);
    gw_sset(GW_V_END_STATUS, "0");
    if (used) gw_emit(buf, used);
    if (ended) { /* a span ended: the context goes back to its parent's, as the shell assigns it */
      if (keep_exp) gw_sset(GW_V_EXPORTED_TP, keep_exp);
      if (keep_cur) gw_sset(GW_V_CURRENT_SPAN, keep_cur);
      bind_variable(GW_ENV_AUTO_OPEN, nopen, 0);
      if (keep_exp) bind_variable(GW_ENV_TRACEPARENT, keep_exp, 0);
    }
    free(nopen);
    free(keep_cur);
    free(keep_exp);
  }
  gw_iset(GW_V_DEPTH, depth);
  return DONE;
}

/* The depth the trap's text compares (gwtrace-auto-fn.sh, note 13): BASH_SOURCE's length; bash < 4.4
 * leaves a function of a -c or -s script, or an imported one, out of BASH_SOURCE: FUNCNAME's length
 * there while a function runs (FUNCNAME[0] set), as the shell texts count it. */
static long trap_depth(void *src) {
  if (gw_version() < 404) {
    void *fa = gw_array_of(GW_BASH_FUNCNAME);
    if (fa && array_reference(fa, 0)) return gw_array_count(fa);
  }
  return gw_array_count(src);
}

static int decide(int rc) {
  const char *cmd = the_printed_command_except_trap ? the_printed_command_except_trap : "";
  const char *mode;
  void *src = gw_array_of(GW_BASH_SOURCE);
  long depth, ad, asl;
  int ok = 1, same_key = 0, ps, done;

  if (gw_ival(GW_V_BUSY, &ok) != 0 || !ok) return ok ? DONE : SHELL;
  if (!src) return SHELL;
  depth = trap_depth(src);
  ad = gw_ival(GW_V_DEPTH, &ok);
  asl = gw_ival(GW_V_SUBSHELL, &ok);
  if (!ok) return SHELL;
  if (depth == ad && subshell_level == asl && cmd[0] && !starts_special(cmd)) return DONE;

  mode = gw_sval(GW_V_MODE);
  if (echo_command_at_execute || !mode || *mode || needs_shell_word(cmd)) return SHELL;
  ps = atoi(gw_aref(GW_BASH_PIPESTATUS, 0));
  if (subshell_level != asl && subshell_first(cmd, depth, ad, &same_key) == SHELL) return SHELL;
  done = same_key || depth == ad ? DONE : depth > ad ? enter(depth, ad) : leave(depth, rc, ps);
  if (done == DONE) gw_count[DONE]++;   /* a slow path, done here */
  return done;
}

#ifdef GWTRACE_TEST_MISSING_SYMBOL /* tests only: a function this bash does not export, as another bash may lack one */
extern int gwtrace_no_such_symbol(void);
#endif

static int gwtrace_adbgc_builtin(WORD_LIST *list) {
  int rc;
  SHELL_VAR *fn;
  WORD_LIST *args;
  const char *last;
#ifdef GWTRACE_TEST_MISSING_SYMBOL
  gwtrace_no_such_symbol();
#endif
  if (gw_layout52 < 0) gw_layout52 = gw_bash52();
  if (gw_count_request(list)) return 0;
  rc = last_command_exit_value;
  if (decide(rc) == DONE) return 0;
  gw_count[SHELL]++;
  /* The shell code, with the script's $? and PIPESTATUS[0] handed over as the `case` text's
   * callers do (a second argument: they are in _gwtrace_arc and _gwtrace_aps already). */
  fn = find_function(GW_FN_DBG);
  if (!fn || !gw_iset(GW_V_STATUS, rc) || !gw_sset(GW_V_PIPESTATUS0, gw_aref(GW_BASH_PIPESTATUS, 0))) return 0;
  last = list ? list->word->word : "";
  args = make_word_list(make_word(GW_FN_DBG),
                        make_word_list(make_word(last), make_word_list(make_word(last), 0)));
  execute_shell_function(fn, args);
  dispose_words(args);
  return 0;
}

static char *gwtrace_adbgc_doc[] = {"gwtrace's DEBUG trap for the functions level (internal).", 0};

__attribute__((visibility("default"))) struct builtin _gwtrace_adbgc_struct = {
    GW_BI_FUNCTIONS, gwtrace_adbgc_builtin, BUILTIN_ENABLED, gwtrace_adbgc_doc, GW_BI_FUNCTIONS " [word | --count VAR]", 0,
};
