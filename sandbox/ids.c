/* sandbox/ids.c — the box's ids: its uid/gid maps (written by the parent
 * after clone3), and root's writable --bind folders as id-mapped trees
 * (made by the parent before clone3) so that what the box writes there is
 * root's on disk, as the caller's would be (decision 11). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/box-internal.h"
#include "sandbox/idmap.h"
#include "privhelper/proto.h"

int ids_write_maps(pid_t pid, struct err **err)
{
        char path[64], text[64];
        uid_t uid = getuid();
        gid_t gid = getgid();
        /* Root maps root inside to nobody when it can (idmap.h); else itself. */
        bool nobody = uid == 0 && idmap_root_mapping(65534, NULL, 0) == IDMAP_OTHER;
        uid_t out_uid = nobody ? 65534 : uid;
        gid_t out_gid = nobody ? 65534 : gid;
        snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
                if (write(fd, "deny", 4) != 4) {
                        close(fd);
                        return err_set(err, errno, "deny setgroups in the box");
                }
                close(fd);
        }
        const char *files[2] = { "uid_map", "gid_map" };
        unsigned ids[2] = { out_uid, out_gid };
        for (int i = 0; i < 2; i++) {
                snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, files[i]);
                int n = snprintf(text, sizeof(text), "0 %u 1\n", ids[i]);
                fd = open(path, O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, text, (size_t)n) != n) {
                        int e = errno;
                        if (fd >= 0)
                                close(fd);
                        return err_set(err, e, "write the box's %s", files[i]);
                }
                close(fd);
        }
        return 0;
}

/* Each tree nosuid, nodev and noexec, as a plain rw bind is.  A filesystem
 * that cannot be id-mapped (tmpfs before Linux 6.3, ramfs, procfs...) keeps
 * the plain bind and a note for the banner, or fails the start under
 * --require-sandbox. */
int ids_idmap_binds(const struct box_opts *o, int bind_idmap[BOX_MAX_BINDS], struct box *b, struct err **err)
{
        bool any = false;
        for (size_t i = 0; i < o->nbinds && i < BOX_MAX_BINDS; i++)
                any |= o->binds[i].rw || o->binds[i].idmap;
        if (!any || idmap_root_mapping(65534, NULL, 0) != IDMAP_OTHER ||
            (o->disable & (LAYER_BIT(LAYER_USERNS) | LAYER_BIT(LAYER_MNTNS))))
                return 0;
        _cleanup_close_ int ns = idmap_userns(65534, 65534, err);
        if (ns < 0)
                return err_wrap(err, "id-mapped --bind");
        size_t plain = 0;
        const char *first = NULL;
        char why[160] = "";
        for (size_t i = 0; i < o->nbinds && i < BOX_MAX_BINDS; i++) {
                if (!o->binds[i].rw && !o->binds[i].idmap)
                        continue;
                struct err *e = NULL;
                /* As the plain binds: rw noexec, ro read-only. */
                int t = idmap_tree(o->binds[i].src, ns,
                                   MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                           (o->binds[i].rw ? MOUNT_ATTR_NOEXEC : MOUNT_ATTR_RDONLY),
                                   &e);
                if (t >= 0) {
                        bind_idmap[i] = t;
                        continue;
                }
                if (!first) {
                        first = o->binds[i].src;
                        snprintf(why, sizeof(why), "%s", err_msg(e));
                }
                err_free(e);
                plain++;
        }
        if (plain && o->require)
                return err_setc(err, BOX_E_LAYER, 0,
                                "sandbox layer unavailable: id-mapped --bind of %s (%s; its filesystem cannot be "
                                "id-mapped, e.g. tmpfs before Linux 6.3): files the box writes there would be owned "
                                "by 65534",
                                first, why);
        if (plain)
                snprintf(b->notes, sizeof(b->notes),
                         "--bind %.120s%s not id-mapped (%s): files the box writes there are owned by 65534", first,
                         plain > 1 ? " and others" : "", why);
        return 0;
}

void ids_close_idmap_binds(int bind_idmap[BOX_MAX_BINDS])
{
        for (size_t i = 0; i < BOX_MAX_BINDS; i++)
                if (bind_idmap[i] >= 0)
                        bind_idmap[i] = (close(bind_idmap[i]), -1);
}

int ids_helper_trees(const struct box_opts *o, struct box_child *c, struct box *b, struct err **err)
{
        bool ns = !(o->disable & (LAYER_BIT(LAYER_USERNS) | LAYER_BIT(LAYER_MNTNS)));
        size_t plain = 0;
        const char *first = NULL;
        char why[160] = "";
        for (size_t i = 0; ns && i < o->nbinds && i < BOX_MAX_BINDS; i++) {
                bool mapped = o->binds[i].rw || o->binds[i].idmap;
                struct err *e = NULL;
                int t = priv_request(PRIV_TREE, o->binds[i].src, mapped ? 65534 : -1, mapped ? 65534 : -1,
                                     MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                             (o->binds[i].rw ? MOUNT_ATTR_NOEXEC : MOUNT_ATTR_RDONLY),
                                     &e);
                if (t >= 0) {
                        c->bind_idmap[i] = t;
                } else if (mapped && !first) {
                        /* not the operator's folder, or not id-mappable: a plain bind the child opens */
                        first = o->binds[i].src;
                        snprintf(why, sizeof(why), "%s", err_msg(e));
                        plain++;
                } else if (mapped) {
                        plain++;
                }
                err_free(e);
        }
        if (plain && o->require)
                return err_setc(err, BOX_E_LAYER, 0,
                                "sandbox layer unavailable: id-mapped --bind of %s (%s): files the box writes there "
                                "would be owned by 65534", first, why);
        if (plain)
                snprintf(b->notes, sizeof(b->notes),
                         "--bind %.120s%s not id-mapped (%s): files the box writes there are owned by 65534", first,
                         plain > 1 ? " and others" : "", why);
        if (ns)
                c->program_tree = priv_request(PRIV_TREE, o->program, -1, -1, MOUNT_ATTR_RDONLY, NULL);
        return 0;
}
