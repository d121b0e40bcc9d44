/* probe.c: what the load check asks of a bash binary before the accelerator is trusted in it.
 *
 * Why: bash_abi.h declares bash's structures by hand. A bash built with another layout would have
 * the other builtins read the wrong fields, free() a foreign pointer or write into a readonly
 * variable, and a missing symbol would end the traced script with "symbol lookup error" (exit 127).
 * So no traced script loads this library until gwtrace/shim/accel.py has run this builtin in a
 * child bash of the same binary (where a crash hurts nothing) and compared a canary workload's
 * events with the shell code's. The library is linked with -z now: a missing symbol fails
 * `enable -f` in that child, never a call later.
 *
 * `_gwtrace_aprobe LINENO BASH_SUBSHELL STATUS`, called by the check's script from a function
 * (accel.py, PROBE) once it has set the variables below, reads back every field and global this
 * library uses and compares them with what the script knows; then it writes values the script
 * reads back (a scalar replaced in place, an array element, an associative array's key, an
 * exported variable). It sets _gwtrace_pstamp to GWTRACE_ACCEL_STAMP and _gwtrace_pfail to the
 * first invariant that does not hold ("" when all do). With `--count VAR`, the other builtins
 * report what they handled instead (shellvars.c, gw_count).
 *
 * Licence: GPL-3.0-or-later, as bash (functions.c says why).
 */
#include <stdlib.h>
#include <string.h>

#include "shellvars.h"

static int is(const SHELL_VAR *v, const char *name, const char *value, int attributes, int context) {
  return v && v->name && !strcmp(v->name, name) && v->value && (!value || !strcmp(v->value, value)) &&
         v->attributes == attributes && v->context == context && !v->dynamic_value && !v->assign_func;
}

static const char *check(WORD_LIST *list) {
  SHELL_VAR *v;
  const char *s;
  char *key;
  if (!list || !list->next || !list->next->next) return "arguments";
  if (!is(find_variable(GW_P_SCALAR), GW_P_SCALAR, "plain", 0, 0)) return "a scalar's fields";
  if (!is(find_variable(GW_P_READONLY), GW_P_READONLY, "ro", att_readonly, 0)) return "a readonly variable's flags";
  if (!is(find_variable(GW_P_EXPORTED), GW_P_EXPORTED, "ex", att_exported, 0)) return "an exported variable's flags";
  if (!is(find_variable(GW_P_LOCAL), GW_P_LOCAL, "lo", att_local, 1)) return "a local variable's flags and context";
  v = find_variable(GW_P_ARRAY);
  if (!is(v, GW_P_ARRAY, 0, att_array, 0)) return "an indexed array's flags";
  if (gw_array_count(v->value) != 3) return "an array's length";
  s = array_reference(v->value, 5);
  if (!s || strcmp(s, "b") || array_reference(v->value, 4)) return "an array's elements";
  v = find_variable(GW_P_ASSOC);
  if (!is(v, GW_P_ASSOC, 0, att_assoc, 0)) return "an associative array's flags";
  s = assoc_reference(v->value, "k");
  if (!s || strcmp(s, "v")) return "an associative array's elements";
  v = find_function(GW_P_FUNCTION);
  if (!v || !v->name || strcmp(v->name, GW_P_FUNCTION) || !(v->attributes & att_function)) return "a function";
  if (line_number != atoi(list->word->word)) return "line_number";
  if (subshell_level != atoi(list->next->word->word)) return "subshell_level";
  if (last_command_exit_value != atoi(list->next->next->word->word)) return "last_command_exit_value";
  if (echo_command_at_execute) return "echo_command_at_execute";
  if (!the_printed_command_except_trap || strncmp(the_printed_command_except_trap, GW_BI_PROBE " ", sizeof GW_BI_PROBE))
    return "the_printed_command_except_trap";
  /* the round trips: the check's script reads these back */
  if (!gw_sset(GW_P_SCALAR, "set in C")) return "replacing a scalar";
  if (gw_sset(GW_P_READONLY, "x")) return "a readonly variable replaced";
  if (!gw_aset(GW_P_ARRAY, 7, "c7")) return "setting an array element";
  key = strdup("k2");
  if (!key || assoc_insert(find_variable(GW_P_ASSOC)->value, key, "m2") < 0) return "setting an associative key";
  gw_export(GW_P_EXPORT, "exported in C");
  return "";
}

static int gwtrace_aprobe_builtin(WORD_LIST *list) {
  const char *failed;
  gw_layout52 = gw_bash52();
  failed = check(list);
  bind_variable(GW_P_STAMP, GWTRACE_ACCEL_STAMP, 0);
  bind_variable(GW_P_FAIL, (char *)failed, 0);
  return *failed ? 1 : 0;
}

static char *gwtrace_aprobe_doc[] = {"gwtrace's load check of the accelerator (internal).", 0};

__attribute__((visibility("default"))) struct builtin _gwtrace_aprobe_struct = {
    GW_BI_PROBE, gwtrace_aprobe_builtin, BUILTIN_ENABLED, gwtrace_aprobe_doc,
    GW_BI_PROBE " LINENO BASH_SUBSHELL STATUS", 0,
};
