/* fuzz.h — what the fuzz targets share. Each target defines
 * LLVMFuzzerTestOneInput; built with clang -fsanitize=fuzzer it is a
 * libFuzzer binary (tests/fuzz/run-fuzz.sh), built with replay_main.c it
 * replays a corpus in make check (tests/fuzz_replay.sh). */
#ifndef DT_FUZZ_H
#define DT_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Write the input to this process's scratch file (the readers under test
 * take a path); returns the path, or NULL. The file is rewritten each time
 * and removed at exit. `suffix` (".ini", "") ends the name. */
const char *fuzz_scratch_file(const uint8_t *data, size_t size,
                              const char *suffix);

#endif /* DT_FUZZ_H */
