/*
 * fuzz_cri_log.c - libFuzzer target for the agent's CRI log reader (lib/agent/logread.c).
 *
 * The first byte picks the options (timestamps, a tail of 0 to 7 records or none, a byte
 * limit, a since time); the rest is the log file's content, written to a scratch file.
 * Any content must read to its end without a crash, and the output must respect the
 * byte limit.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckube/agent.h"
#include "ckube/internal/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void remove_dir(void)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/0.log", dir);
    unlink(path);
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!dir[0]) {
        snprintf(dir, sizeof(dir), "/tmp/ckube-fuzz-cri-XXXXXX");
        if (!mkdtemp(dir))
            abort();
        atexit(remove_dir);
    }
    char path[128], exit_path[128];
    snprintf(path, sizeof(path), "%s/0.log", dir);
    snprintf(exit_path, sizeof(exit_path), "%s/0/exit", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        abort();
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
    uint8_t o = data[0];
    struct ck_log_options opts = {
        .timestamps = o & 1,
        .tail_lines = (o & 2) ? (o >> 2) & 7 : -1,
        .limit_bytes = (o & 32) ? 1 + (o >> 6) * 9 : 0,
        .since_ns = (o & 64) ? ck_log_since(NULL, "2026-01-01T00:00:01Z", 0) : 0,
    };
    struct ck_log_reader *r = NULL;
    if (ck_log_reader_open(path, exit_path, &opts, &r) != 0)
        return 0;
    char buf[512];
    ssize_t n;
    int64_t total = 0;
    while ((n = ck_log_reader_read(r, buf, sizeof(buf))) > 0)
        total += n;
    if (n != CK_LOG_END || (opts.limit_bytes > 0 && total > opts.limit_bytes))
        abort();
    ck_log_reader_free(r);
    unlink(path);
    return 0;
}
