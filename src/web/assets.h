/* The dashboard's static files (src/web/static/), embedded into the binary
 * at build time by gen_assets.py. */
#ifndef KV_WEB_ASSETS_H
#define KV_WEB_ASSETS_H

#include <stddef.h>

typedef struct kv_web_asset {
    const char *path;          /* URL path, "/index.html" */
    const char *mime;          /* Content-Type */
    const unsigned char *data; /* LEN bytes, followed by a NUL */
    size_t len;
} kv_web_asset;

/* The generated table (web_assets.c in the build directory). */
extern const kv_web_asset kv_web_assets[];
extern const size_t kv_web_n_assets;

/* The asset served at PATH ("/" is "/index.html"), or NULL. */
const kv_web_asset *kv_web_asset_find(const char *path);

#endif
