/* The kept baseline (see baseline.h). */
#include "judge/baseline.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

char *kv_baseline_path(const char *run_dir, const char *cache_dir, const char *key)
{
    if (run_dir && *run_dir) return kv_asprintf("%s/baseline-%s.json", run_dir, key);
    return kv_asprintf("%s/baseline/%s.json", cache_dir, key);
}

json_t *kv_baseline_load(const char *path, double max_age_s)
{
    char *text = kv_read_file(path, NULL);
    if (!text) return NULL;
    json_t *e = kv_json_loads(text);
    free(text);
    double saved = json_number_value(json_object_get(e, "saved_at"));
    if (!e || !json_is_object(json_object_get(e, "scenarios")) ||
        !(saved > 0 && (double)time(NULL) - saved <= max_age_s)) {
        if (e) json_decref(e);
        return NULL;
    }
    return e;
}

int kv_baseline_save(const char *path, const json_t *entry)
{
    char *dir = kv_path_dirname(path);
    kv_mkdir_p(dir, 0755);
    free(dir);
    char *tmp = kv_asprintf("%s.%d.tmp", path, (int)getpid());
    char *text = json_dumps(entry, JSON_COMPACT | JSON_REAL_PRECISION(17));
    int rc = text && kv_write_file(tmp, text, strlen(text)) == 0 && rename(tmp, path) == 0 ? 0 : -1;
    if (rc != 0) unlink(tmp);
    free(text);
    free(tmp);
    return rc;
}

static int same_string(const json_t *a, const json_t *b, const char *key)
{
    const char *x = json_string_value(json_object_get(a, key));
    const char *y = json_string_value(json_object_get(b, key));
    return (!x && !y) || (x && y && strcmp(x, y) == 0);
}

int kv_baseline_still_valid(const json_t *entry, const json_t *device, const json_t *telemetry,
                            const char **why)
{
    const json_t *then = json_object_get(entry, "device");
    if (!same_string(then, device, "name") || !same_string(then, device, "pci_bus")) {
        *why = "another device";
        return 0;
    }
    const json_t *tel = json_object_get(entry, "telemetry");
    double c0 = json_number_value(json_object_get(tel, "sm_clock_mhz"));
    double c1 = json_number_value(json_object_get(telemetry, "sm_clock_mhz"));
    if (c0 > 0 && c1 > 0 && fabs(c1 - c0) > 0.1 * c0) {
        *why = "the SM clock moved";
        return 0;
    }
    double t0 = json_number_value(json_object_get(tel, "temperature_c"));
    double t1 = json_number_value(json_object_get(telemetry, "temperature_c"));
    if (json_object_get(tel, "temperature_c") && json_object_get(telemetry, "temperature_c") &&
        fabs(t1 - t0) > 15) {
        *why = "the temperature moved";
        return 0;
    }
    *why = NULL;
    return 1;
}
