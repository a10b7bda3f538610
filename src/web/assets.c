/* Lookup of the embedded static files by URL path. */
#include "web/assets.h"

#include <string.h>

const kv_web_asset *kv_web_asset_find(const char *path)
{
    if (!path) return NULL;
    if (strcmp(path, "/") == 0) path = "/index.html";
    for (size_t i = 0; i < kv_web_n_assets; i++)
        if (strcmp(kv_web_assets[i].path, path) == 0) return &kv_web_assets[i];
    return NULL;
}
