/* bash_abi.h: the part of bash's interface the accelerator uses, as GNU bash 4.2-5.3 exports it.
 *
 * Declared here rather than taken from bash's headers: these structures and functions are the
 * same in every GNU bash from 4.2 to 5.3, except the header of bash's arrays (see shellvars.c,
 * array_count), so no bash source tree is needed to build. Loadable builtins reach them because
 * bash exports its symbols to what `enable -f` loads. A distribution's bash may differ: nothing
 * here is trusted before the load check (probe.c, gwtrace/shim/accel.py) has read it back from
 * that very bash binary.
 *
 * Licence: GPL-3.0-or-later, as bash (functions.c says why).
 */
#ifndef GWTRACE_BASH_ABI_H
#define GWTRACE_BASH_ABI_H

#include <stdint.h>

typedef intmax_t arrayind_t;
typedef struct word_desc { char *word; int flags; } WORD_DESC;
typedef struct word_list { struct word_list *next; WORD_DESC *word; } WORD_LIST;
typedef struct variable {
  char *name, *value, *exportstr;
  void *dynamic_value, *assign_func;
#ifdef GWTRACE_TEST_SKEW
  int skew; /* tests only (tests/test_accel.py): a layout bash does not have, which the load check must refuse */
#endif
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
#define att_function 0x8
#define att_local 0x20
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
extern int last_command_exit_value;

#endif
