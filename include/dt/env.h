/* env.h — environment lists and PATH, as launcher (and other) plugins read
 * them: a variable of the job's environment (dt_launch_spec_t.env, an
 * identify op's envp), and whether a program the plugin runs is here (its
 * `available` op). */
#ifndef DT_ENV_H
#define DT_ENV_H

#ifdef __cplusplus
extern "C" {
#endif

/* The value of NAME in an environ-style list ("NAME=VALUE" strings, NULL
 * at the end; env NULL counts as empty): a pointer into that entry, or
 * NULL when NAME is not there. The first entry of that name wins. An
 * environ or identify envp (char *const *) is passed with a cast. */
const char *dt_env_value(const char *const *env, const char *name);

/* 1 when prog can be run here: a name with a '/' is a path that must be
 * executable; any other must be an executable file in one of the
 * non-empty directories of $PATH (unset: /usr/bin:/bin). 0 otherwise,
 * and for NULL or "". */
int dt_program_found(const char *prog);

#ifdef __cplusplus
}
#endif
#endif /* DT_ENV_H */
