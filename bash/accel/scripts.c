/* scripts.c: the scripts level's spans for the functions a script calls from its top level.
 *
 * gwtrace-auto-top.sh's common cases (its notes 1-3): the DEBUG trap runs without functrace, for
 * the script's top-level commands only. A command word is classified once (_gwtrace_atw: "=" not
 * a function, 1 a function to trace); a call begins a span that the next top-level command ends
 * with status 0, or the exit with its status (`_gwtrace_atopc --end STATUS`). A non-zero status to
 * judge, or ids to draw from the kernel, go to the shell code: gwtrace-auto-top.sh, read then.
 *
 * Licence: GPL-3.0-or-later, as bash (functions.c says why).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shellvars.h"

static int top_classify(const char *w, SHELL_VAR *cache) {
  const char *known = assoc_reference(cache->value, (char *)w);
  char *key;
  int traced;
  if (known) return known[0] == '1';
  traced = !strchr(w, '=') && find_function(w) && !GW_HAS_PREFIX(w, GW_PREFIX_INTERNAL) && !GW_HAS_PREFIX(w, GW_PREFIX_LIBRARY) &&
           !GW_HAS_PREFIX(w, GW_PREFIX_PUBLIC) && strcmp(w, "trap") && strcmp(w, "exit") && !strpbrk(w, "\\\t\n\r");
  key = strdup(w);
  if (key) assoc_insert(cache->value, key, traced ? "1" : "=");
  return traced;
}

/* _gwtrace_auto_top_end with a known status: the end line, GWTRACE_AUTO_OPEN, TRACEPARENT back. */
static void top_end(const char *status) {
  const char *sp = gw_sval(GW_V_TOP_SPAN), *atr = gw_sval(GW_V_TRACE_ID), *otp, *otpset;
  SHELL_VAR *open_ = find_variable(GW_ENV_AUTO_OPEN);
  char ts[40], line[512];
  int n, tp_ro;
  if (!sp || !*sp || !atr) return;
  gw_now(ts, sizeof ts);
  n = snprintf(line, sizeof line, "gw1\tE\t%s\t%ld\t%s\t%s\t%s\n", ts, (long)getpid(), atr, sp, status);
  if (n > 0 && (size_t)n < sizeof line) gw_emit(line, (size_t)n);
  if (open_ && open_->value && !(open_->attributes & (att_readonly | att_array | att_assoc))) {
    char *nv = strdup(open_->value);
    if (nv && gw_strip_sid(nv, sp)) bind_variable(GW_ENV_AUTO_OPEN, nv, 0);
    free(nv);
  }
  gw_sset(GW_V_TOP_SPAN, "");
  gw_traceparent(0, &tp_ro);
  if (tp_ro) return;
  otp = gw_sval(GW_V_TOP_OLD_TP);
  otpset = gw_sval(GW_V_TOP_OLD_TP_SET);
  if (otpset && *otpset)
    gw_export(GW_ENV_TRACEPARENT, otp ? otp : "");
  else
    unbind_variable(GW_ENV_TRACEPARENT);
}

/* _gwtrace_auto_top_begin's common case: an id from the process's prefix and counter. */
static int top_begin(const char *w) {
  const char *pfx = gw_sval(GW_V_ID_PREFIX), *atr = gw_sval(GW_V_TRACE_ID), *afl = gw_sval(GW_V_FLAGS),
             *ats = gw_sval(GW_V_TRACESTATE), *amain = gw_sval(GW_V_MAIN_PID), *open_, *tp;
  SHELL_VAR *ov = find_variable(GW_ENV_AUTO_OPEN);
  char sid[32], ts[40], lbuf[32], tpbuf[80], line[2048];
  long actr;
  int ok = 1, n, tp_set, tp_ro;
  actr = gw_ival(GW_V_ID_COUNTER, &ok);
  if (!ok || !pfx || !*pfx || !atr || !afl || !amain || actr + 1 >= 2000000) return SHELL;
  gw_now(ts, sizeof ts);
  gw_span_id(sid, sizeof sid, pfx, actr + 1);
  n = snprintf(line, sizeof line, "gw1\tB\t%s\t%ld\t%s\t%s\t%s\t%s\t%s\t%s\t%s\tgwtrace.kind=function\n", ts,
               (long)getpid(), atr, sid, gw_sval(GW_V_SCRIPT_SPAN) ? gw_sval(GW_V_SCRIPT_SPAN) : "",
               gw_sval(GW_V_SCRIPT_REMOTE) ? gw_sval(GW_V_SCRIPT_REMOTE) : "0", afl, ats && *ats ? ats : "-", w);
  if (n < 0 || (size_t)n >= sizeof line) return SHELL;
  tp = gw_traceparent(&tp_set, &tp_ro);
  snprintf(lbuf, sizeof lbuf, "%d", line_number);
  gw_iset(GW_V_ID_COUNTER, actr + 1);
  gw_sset(GW_V_TOP_SPAN, sid);
  gw_sset(GW_V_TOP_LINE, lbuf);
  gw_sset(GW_V_TOP_NAME, w);
  gw_sset(GW_V_TOP_OLD_TP, tp);
  gw_sset(GW_V_TOP_OLD_TP_SET, tp_set ? "1" : "");
  gw_emit(line, (size_t)n);
  open_ = ov && ov->value ? ov->value : "";
  if (ov && !(ov->attributes & (att_readonly | att_array | att_assoc)) && !strncmp(open_, amain, strlen(amain)) &&
      open_[strlen(amain)] == ':')
    gw_open_add(sid);
  if (!tp_ro) {
    snprintf(tpbuf, sizeof tpbuf, "00-%s-%s-%s", atr, sid, afl);
    gw_export(GW_ENV_TRACEPARENT, tpbuf);
  }
  return DONE;
}

/* The shell code, read now: gwtrace-auto-top.sh's _gwtrace_auto_top with the script's $? and
 * PIPESTATUS[0] handed over as arguments (it reads them itself when the trap calls it). */
/* A function of gwtrace-auto-top.sh, which is read the first time one is needed; NULL if it cannot be. */
static SHELL_VAR *top_function(const char *name) {
  SHELL_VAR *fn = find_function(name);
  char path[4096];
  if (!fn) {
    const char *dir = gw_sval(GW_V_LAYER_DIR);
    if (!dir || (size_t)snprintf(path, sizeof path, "%s/" GW_FILE_TOP, dir) >= sizeof path) return NULL;
    source_file(path, 0);
    fn = find_function(name);
  }
  return fn;
}

static int top_shell(const char *last, int rc, const char *ps) {
  SHELL_VAR *fn;
  char rcs[16];
  WORD_LIST *args;
  gw_count[SHELL]++;
  if (!(fn = top_function(GW_FN_TOP))) return 0;
  snprintf(rcs, sizeof rcs, "%d", rc);
  args = make_word_list(make_word(GW_FN_TOP),
                        make_word_list(make_word(last), make_word_list(make_word(rcs), make_word_list(make_word(ps), 0))));
  execute_shell_function(fn, args);
  dispose_words(args);
  return 0;
}

/* A failing top function's end, at exit: gwtrace-auto-top.sh's _gwtrace_auto_top_end STATUS, which
 * notes where it was called (gwtrace-auto-util.sh's _gwtrace_auto_where), as without the accelerator. */
static int top_end_shell(const char *status) {
  SHELL_VAR *fn;
  WORD_LIST *args;
  gw_count[SHELL]++;
  if (!(fn = top_function(GW_FN_TOP_END))) return 0;
  args = make_word_list(make_word(GW_FN_TOP_END), make_word_list(make_word(status), 0));
  execute_shell_function(fn, args);
  dispose_words(args);
  return 0;
}

static int gwtrace_atopc_builtin(WORD_LIST *list) {
  int rc = last_command_exit_value, ok = 1;
  const char *cmd = the_printed_command_except_trap ? the_printed_command_except_trap : "";
  const char *atsp = gw_sval(GW_V_TOP_SPAN), *atop = gw_sval(GW_V_TOP_TRAP), *amain = gw_sval(GW_V_MAIN_PID);
  const char *last = list ? list->word->word : "";
  SHELL_VAR *cache = gw_plain(GW_V_TOP_WORDS, att_assoc);
  char w[256], ps[24];   /* a copy: reading gwtrace-auto-top.sh replaces PIPESTATUS's elements */
  size_t n = strcspn(cmd, " ");
  void *src;

  if (gw_count_request(list)) return 0;
  /* the exit, or the script's own DEBUG trap: two words (the trap passes one, "$_", which may be "--end") */
  if (list && list->next && !strcmp(list->word->word, "--end")) {
    if (strcmp(list->next->word->word, "0")) return top_end_shell(list->next->word->word);   /* a failure: where */
    top_end(list->next->word->word);
    gw_count[DONE]++;
    return 0;
  }
  snprintf(ps, sizeof ps, "%s", gw_aref(GW_BASH_PIPESTATUS, 0));
  if (!cache || n >= sizeof w) return top_shell(last, rc, ps);
  memcpy(w, cmd, n);
  w[n] = 0;
  if ((!atsp || !*atsp)) {                                    /* the `case` text's fast path */
    const char *known = assoc_reference(cache->value, w);
    if (known ? strchr(known, '=') != 0 : strchr(w, '=') != 0) return 0;
  }
  if (!amain || atol(amain) != (long)getpid() || !atop || !*atop || gw_ival(GW_V_BUSY, &ok) != 0 || !ok) return 0;
  if (!*w) return 0;
  {
    int traced = top_classify(w, cache);
    src = gw_array_of(GW_BASH_SOURCE);
    if (!src) return top_shell(last, rc, ps);
    if (gw_layout52 < 0) gw_layout52 = gw_bash52();
    if (gw_array_count(src) != 1) return 0;
    if (atsp && *atsp) {
      if (rc || atoi(ps)) return top_shell(last, rc, ps);   /* a status to judge */
      top_end("0");
      gw_count[DONE]++;
    }
    if (traced && top_begin(w) == SHELL) return top_shell(last, rc, ps);
    if (traced) gw_count[DONE]++;
  }
  return 0;
}

static char *gwtrace_atopc_doc[] = {"gwtrace's DEBUG trap for the scripts level (internal).", 0};

__attribute__((visibility("default"))) struct builtin _gwtrace_atopc_struct = {
    GW_BI_SCRIPTS, gwtrace_atopc_builtin, BUILTIN_ENABLED, gwtrace_atopc_doc,
    GW_BI_SCRIPTS " [word | --end STATUS | --count VAR]", 0,
};
