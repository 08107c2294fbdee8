/* The robot scenes one ompl_plan run stores in tandemd, shared by its planners
 * (scene_leases.h: the races and why each is safe). */
#include "scene_leases.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

namespace {

/* The file's text up to its first NUL (what tdm_robot_scene_put sends). */
int read_text(const char *path, std::string *out, std::string *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        *err = std::string("cannot read ") + path + ": " + strerror(errno);
        return -1;
    }
    out->clear();
    char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, got);
    bool bad = ferror(f);
    int e = errno;
    fclose(f);
    if (bad) {
        *err = std::string("cannot read ") + path + ": " + strerror(e);
        return -1;
    }
    out->resize(strlen(out->c_str()));
    return 0;
}

/* SHA-256 of the robot id and the text: the key of a scene. */
int scene_key(const uint8_t robot_id[TDM_ID_BYTES], const std::string &text, std::string *key, std::string *err)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) && EVP_DigestUpdate(ctx, robot_id, TDM_ID_BYTES) &&
              EVP_DigestUpdate(ctx, text.data(), text.size()) && EVP_DigestFinal_ex(ctx, md, &len);
    EVP_MD_CTX_free(ctx);
    if (!ok) {
        *err = "SHA-256 of the scene failed (libcrypto)";
        return -1;
    }
    key->assign((const char *)md, len);
    return 0;
}

} // namespace

int scene_leases::acquire(tdm_client *c, const char *name, const uint8_t robot_id[TDM_ID_BYTES],
                          const char *yaml_path, lease *out, std::string *err)
{
    std::string text, key;
    if (read_text(yaml_path, &text, err) < 0 || scene_key(robot_id, text, &key, err) < 0) return -1;
    std::shared_ptr<entry> e;
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto &slot = table_[key];
        if (!slot) slot = std::make_shared<entry>();
        slot->pins++;
        e = slot;
    }
    bool stored = true;
    {
        std::lock_guard<std::mutex> lock(e->mu);
        if (e->users == 0) {
            int created = 0;
            if (tdm_robot_scene_put(c, name, robot_id, text.c_str(), e->id, &created, NULL)) {
                *err = std::string(yaml_path) + ": tandemd: " + tdm_client_errstr(c);
                stored = false;
            } else {
                e->created = created != 0;
            }
        }
        if (stored) {
            e->users++;
            memcpy(out->id, e->id, TDM_ID_BYTES);
        }
    }
    if (!stored) { /* the entry's lock released first: unpin may drop the entry */
        e.reset();
        unpin(key);
        return -1;
    }
    out->key = key;
    out->e = std::move(e);
    return 0;
}

int scene_leases::release(tdm_client *c, lease *l, std::string *err)
{
    if (!l->e) return 0;
    int rc = 0;
    {
        entry &e = *l->e;
        std::lock_guard<std::mutex> lock(e.mu);
        if (--e.users == 0) {
            bool ours = e.created;
            e.created = false;
            if (ours && tdm_scene_delete(c, e.id)) {
                *err = std::string("tandemd scene delete: ") + tdm_client_errstr(c);
                rc = -1;
            }
        }
    }
    l->e.reset();
    unpin(l->key);
    return rc;
}

void scene_leases::unpin(const std::string &key)
{
    std::lock_guard<std::mutex> lock(mu_);
    auto it = table_.find(key);
    if (it != table_.end() && --it->second->pins == 0) table_.erase(it);
}

size_t scene_leases::size()
{
    std::lock_guard<std::mutex> lock(mu_);
    return table_.size();
}
