/* state_names.h: the names the accelerator shares with the shell code. GENERATED from
 * spec/accel-state.json by spec/gen_state_names.py (`make spec`): edit the description, not this.
 * Licence: GPL-3.0-or-later, as bash (functions.c says why).
 */
#ifndef GWTRACE_STATE_NAMES_H
#define GWTRACE_STATE_NAMES_H

/* the version of this contract: the load check names the verified copy with it and gwtrace-auto.sh loads only a copy with the stamp it was written for; change it whenever a row here changes meaning */
#ifndef GWTRACE_ACCEL_STAMP
#define GWTRACE_ACCEL_STAMP "gwa1"
#endif

/* state: gwtrace's own shell variables (gwtrace-auto*.sh's _gwtrace_a*) */
/* > 0 while gwtrace's own code runs (its EXIT trap, the script's `trap` emulation): the DEBUG traps do nothing then (scalar; written by shell, read by shell, C) */
#define GW_V_BUSY                  "_gwtrace_abusy"
/* the span-id counter, 1000000..1999999: the next span id is GW_V_ID_PREFIX and its last 6 digits; at 2000000 the shell code draws a new prefix (scalar; written by shell, C, read by shell, C) */
#define GW_V_ID_COUNTER            "_gwtrace_actr"
/* the span id of the innermost frame that has a span: the parent of the next function span (scalar; written by shell, C, read by shell, C) */
#define GW_V_CURRENT_SPAN          "_gwtrace_acur"
/* the BASH_SOURCE depth the last slow path saw (the DEBUG trap's fast-path key, gwtrace-auto-fn.sh note 10) (scalar; written by shell, C, read by shell, C) */
#define GW_V_DEPTH                 "_gwtrace_ad"
/* per frame: its BASH_SOURCE depth (array; written by shell, C, read by shell, C) */
#define GW_V_FRAME_DEPTH           "_gwtrace_adep"
/* the directory of gwtrace-auto*.sh: the C code reads gwtrace-auto-top.sh from there when a status has to be judged (scalar; written by shell, read by shell, C) */
#define GW_V_LAYER_DIR             "_gwtrace_adir"
/* the text of the EXIT trap a subshell gets before its first function call (gwtrace-auto-fn.sh note 3) (scalar; written by shell, read by shell, C) */
#define GW_V_SUBSHELL_EXIT_TRAP    "_gwtrace_aexit1"
/* the TRACEPARENT value gwtrace exported last: another value means the script changed it (the shell code handles that) (scalar; written by shell, C, read by shell, C) */
#define GW_V_EXPORTED_TP           "_gwtrace_aexp"
/* the trace flags (2 hex digits) of every B line and of the TRACEPARENT given to children (scalar; written by shell, read by shell, C) */
#define GW_V_FLAGS                 "_gwtrace_afl"
/* the functions entered so far in this process: name -> 1 (a subshell's first command that names none runs no slow path) (assoc; written by shell, C, read by shell, C) */
#define GW_V_FUNCTIONS_SEEN        "_gwtrace_afn"
/* the event log's path (checked to be gwtrace's by gwtrace-auto.sh); '' writes nothing (scalar; written by shell, read by shell, C) */
#define GW_V_EVENT_LOG             "_gwtrace_alog"
/* $BASHPID of the script's main process: only it opens top-level function spans (scalar; written by shell, read by shell, C) */
#define GW_V_MAIN_PID              "_gwtrace_amain"
/* '' normally; x while xtrace is on or a `set`/`source` is pending: the C code then leaves every slow path to the shell code (scalar; written by shell, read by shell, C) */
#define GW_V_MODE                  "_gwtrace_amode"
/* the number of frames on the frame stack (frame 0 is the script span) (scalar; written by shell, C, read by shell, C) */
#define GW_V_FRAMES                "_gwtrace_an"
/* per frame: the function's name (array; written by shell, C, read by shell) */
#define GW_V_FRAME_NAME            "_gwtrace_aname"
/* per frame: TRACEPARENT before its span began (given back when it ends) (array; written by shell, C, read by shell, C) */
#define GW_V_FRAME_OLD_TP          "_gwtrace_aotp"
/* per frame: 1 if TRACEPARENT was set before its span began, '' if it was unset (array; written by shell, C, read by shell, C) */
#define GW_V_FRAME_OLD_TP_SET      "_gwtrace_aotpset"
/* the process whose ids, GWTRACE_AUTO_OPEN and EXIT trap are set up; in any other process the C code leaves it to the shell code (scalar; written by shell, C, read by shell, C) */
#define GW_V_OWNER_PID             "_gwtrace_aown"
/* per frame: the parent span id of its span (array; written by shell, C, read by shell, C) */
#define GW_V_FRAME_PARENT          "_gwtrace_apar"
/* this process's span-id prefix: 10 hex digits from the kernel's uuid (or splitmix64), then 6 counter digits (scalar; written by shell, C, read by shell, C) */
#define GW_V_ID_PREFIX             "_gwtrace_apfx"
/* per frame: $BASHPID of the process that opened it (array; written by shell, C, read by shell, C) */
#define GW_V_FRAME_PID             "_gwtrace_apid"
/* the remote field of the script span's children: 1 when the script span is itself the incoming parent (`gwtrace run` wrote it), else 0 (scalar; written by shell, read by shell, C) */
#define GW_V_SCRIPT_REMOTE         "_gwtrace_aprem"
/* the script's PIPESTATUS[0] before the trap, handed to the shell code (a returned function's own status) (scalar; written by shell, C, read by shell) */
#define GW_V_PIPESTATUS0           "_gwtrace_aps"
/* the script's $? before the trap, handed to the shell code (scalar; written by shell, C, read by shell) */
#define GW_V_STATUS                "_gwtrace_arc"
/* splitmix64 state (decimal) for ids when the kernel's uuid cannot be read (scalar; written by shell, C, read by shell) */
#define GW_V_RNG_STATE             "_gwtrace_arng"
/* the process GW_V_ID_PREFIX and GW_V_RNG_STATE were drawn for: another one draws new ones (scalar; written by shell, C, read by shell, C) */
#define GW_V_RNG_PID               "_gwtrace_arngpid"
/* per frame: its call site, 'LINE NAME FILE' (where a failure happened) (array; written by shell, C, read by shell) */
#define GW_V_FRAME_SITE            "_gwtrace_asite"
/* the BASH_SUBSHELL level the last slow path saw (the other half of the fast-path key) (scalar; written by shell, C, read by shell, C) */
#define GW_V_SUBSHELL              "_gwtrace_asl"
/* per frame: its span id ('' for a frame that tracks depth only) (array; written by shell, C, read by shell, C) */
#define GW_V_FRAME_SPAN            "_gwtrace_asp"
/* the script span's id: the parent of the top-level function spans (scalar; written by shell, read by shell, C) */
#define GW_V_SCRIPT_SPAN           "_gwtrace_asp0"
/* the status field of the E line being written (0 after a clean return) (scalar; written by shell, C, read by shell) */
#define GW_V_END_STATUS            "_gwtrace_ast"
/* $BASHPID of the subshell that got gwtrace's EXIT trap ('' none) (scalar; written by shell, C, read by shell) */
#define GW_V_SUBSHELL_PID          "_gwtrace_asub"
/* the line of the pending top-level function call (where it failed, if it does) (scalar; written by shell, C, read by shell) */
#define GW_V_TOP_LINE              "_gwtrace_atl"
/* the name of the pending top-level function call (scalar; written by shell, C, read by shell) */
#define GW_V_TOP_NAME              "_gwtrace_atn"
/* the scripts level's DEBUG trap text; '' where that level does not trace (a subshell, another level) (scalar; written by shell, read by shell, C) */
#define GW_V_TOP_TRAP              "_gwtrace_atop"
/* TRACEPARENT before the pending top-level function span (given back when it ends) (scalar; written by shell, C, read by shell, C) */
#define GW_V_TOP_OLD_TP            "_gwtrace_atotp"
/* 1 if TRACEPARENT was set before the pending top-level function span, '' if unset (scalar; written by shell, C, read by shell, C) */
#define GW_V_TOP_OLD_TP_SET        "_gwtrace_atotpset"
/* the trace id (32 hex digits) of every line this process writes (scalar; written by shell, read by shell, C) */
#define GW_V_TRACE_ID              "_gwtrace_atr"
/* the incoming TRACESTATE, escaped ('' none: written -) (scalar; written by shell, read by shell, C) */
#define GW_V_TRACESTATE            "_gwtrace_ats"
/* the span id of the pending top-level function span ('' none) (scalar; written by shell, C, read by shell, C) */
#define GW_V_TOP_SPAN              "_gwtrace_atsp"
/* the scripts level's cache of command words: 1 a function to trace, = anything else (assoc; written by shell, C, read by shell, C) */
#define GW_V_TOP_WORDS             "_gwtrace_atw"

/* context: exported variables children inherit */
/* the W3C context children inherit: each span exports itself as the parent, and its end gives back the one before; left alone when the script made it readonly (scalar; written by shell, C, read by shell, C) */
#define GW_ENV_TRACEPARENT         "TRACEPARENT"
/* exported 'PID:TRACE,SPAN,SPAN...': the process and the spans it has open, so that a bash started by `exec` (same pid) can end them (scalar; written by shell, C, read by shell, C) */
#define GW_ENV_AUTO_OPEN           "GWTRACE_AUTO_OPEN"

/* bash: bash's own variables, read only */
/* bash's: its length is the depth compared with GW_V_DEPTH; [1] is a function's call site file (array; written by bash, read by shell, C) */
#define GW_BASH_SOURCE             "BASH_SOURCE"
/* bash's: [0] is a function's call line (array; written by bash, read by shell, C) */
#define GW_BASH_LINENO             "BASH_LINENO"
/* bash's: 5.2 changed the layout of an array's header (shellvars.c gw_array_count) (array; written by bash, read by shell, C) */
#define GW_BASH_VERSINFO           "BASH_VERSINFO"
/* bash's: [0] is the function being entered (array; written by bash, read by shell, C) */
#define GW_BASH_FUNCNAME           "FUNCNAME"
/* bash's: [0] is handed over in GW_V_PIPESTATUS0 (array; written by bash, read by shell, C) */
#define GW_BASH_PIPESTATUS         "PIPESTATUS"

/* function: shell functions the C code calls for the cases it leaves */
/* the functions level's slow path (gwtrace-auto-fn.sh): called with the trap's $_ for every case the C code leaves (function; written by shell, read by C) */
#define GW_FN_DBG                  "_gwtrace_auto_dbg"
/* the scripts level's slow path (gwtrace-auto-top.sh), called with $_, $? and PIPESTATUS[0] (function; written by shell, read by C) */
#define GW_FN_TOP                  "_gwtrace_auto_top"
/* ends the pending top-level function span with a status (gwtrace-auto-top.sh): a failure's, with where it happened (function; written by shell, read by C) */
#define GW_FN_TOP_END              "_gwtrace_auto_top_end"

/* builtin: the builtins the library defines (the shell enables and calls them) */
/* the functions level's DEBUG trap as a builtin (functions.c): `_gwtrace_adbgc "$_"` or `--count VAR` (builtin; written by C, read by shell) */
#define GW_BI_FUNCTIONS            "_gwtrace_adbgc"
/* the scripts level's DEBUG trap as a builtin (scripts.c): `_gwtrace_atopc "$_"`, `--end STATUS` or `--count VAR` (builtin; written by C, read by shell) */
#define GW_BI_SCRIPTS              "_gwtrace_atopc"
/* the load check's probe (probe.c), run by gwtrace/shim/accel_check.py in a child bash (builtin; written by C, read by shell) */
#define GW_BI_PROBE                "_gwtrace_aprobe"

/* probe: the load check's variables (gwtrace/shim/accel_check.py's script) */
/* probe: a plain scalar ('plain'), replaced in C ('set in C') (scalar; written by shell, C, read by shell, C) */
#define GW_P_SCALAR                "_gwtrace_pv"
/* probe: a readonly scalar ('ro'): the C code's attempt to replace it must fail (scalar; written by shell, C, read by C) */
#define GW_P_READONLY              "_gwtrace_pr"
/* probe: an exported scalar ('ex') (scalar; written by shell, read by C) */
#define GW_P_EXPORTED              "_gwtrace_px"
/* probe: a function's local ('lo', context 1) (scalar; written by shell, read by C) */
#define GW_P_LOCAL                 "_gwtrace_pl"
/* probe: an indexed array ([0]=a [5]=b [9]=c); C sets [7]=c7 (array; written by shell, C, read by shell, C) */
#define GW_P_ARRAY                 "_gwtrace_pa"
/* probe: an associative array ([k]=v); C adds [k2]=m2 (assoc; written by shell, C, read by shell, C) */
#define GW_P_ASSOC                 "_gwtrace_pm"
/* probe: the function that calls the probe (function; written by shell, read by C) */
#define GW_P_FUNCTION              "_gwtrace_pf"
/* probe: exported by the C code ('exported in C') (scalar; written by C, read by shell) */
#define GW_P_EXPORT                "_gwtrace_pe"
/* probe: the library's stamp (GWTRACE_ACCEL_STAMP) (scalar; written by C, read by shell) */
#define GW_P_STAMP                 "_gwtrace_pstamp"
/* probe: the first invariant that does not hold ('' all do) (scalar; written by C, read by shell) */
#define GW_P_FAIL                  "_gwtrace_pfail"

/* prefixes */
/* gwtrace's internal functions: never traced */
#define GW_PREFIX_INTERNAL         "_gwtrace_"
/* the bash library's API (trace_begin...): never traced */
#define GW_PREFIX_LIBRARY          "trace_"
/* gwtrace's public shell functions: never traced at the scripts level */
#define GW_PREFIX_PUBLIC           "gwtrace_"

/* files */
/* read from GW_V_LAYER_DIR the first time the scripts level's shell code is needed */
#define GW_FILE_TOP                "gwtrace-auto-top.sh"

#endif
