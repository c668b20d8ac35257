/* mig.c - MIG geometry: which GPU instances fit where on a MIG GPU.
 *
 * A MIG-capable GPU has 8 memory slices and 7 compute slices.  A GPU
 * instance profile ("3g.40gb") takes `compute` compute slices and `size`
 * memory slices starting at one of its allowed start slices; two instances
 * may not share a memory slice.  The tables below are NVIDIA's (MIG User
 * Guide, "Supported MIG Profiles"; the same placements that
 * nvmlDeviceGetGpuInstancePossiblePlacements_v2 returns), for the GPU
 * instance profiles without media extensions (+me profiles are left out).
 *
 *   profile   compute  size  starts        (A100-40GB / A100-80GB, H100-80GB / H200-141GB)
 *   1g        1        1     0 1 2 3 4 5 6  1g.5gb   / 1g.10gb  / 1g.18gb
 *   1g (x2)   1        2     0 2 4 6        1g.10gb  / 1g.20gb  / 1g.35gb
 *   2g        2        2     0 2 4          2g.10gb  / 2g.20gb  / 2g.35gb
 *   3g        3        4     0 4            3g.20gb  / 3g.40gb  / 3g.71gb
 *   4g        4        4     0              4g.20gb  / 4g.40gb  / 4g.71gb
 *   7g        7        8     0              7g.40gb  / 7g.80gb  / 7g.141gb
 *
 * Example (H100-80GB): instances 3g.40gb@4 and 1g.10gb@0 are valid (slices
 * 4-7 and 0); adding 2g.20gb@0 is refused (slice 0 taken), 2g.20gb@2 fits
 * (slices 2-3).  A 4g.40gb then fits nowhere (it must start at 0).
 *
 * Slices claimed for a reclaiming job (gp__gpu.claim_mig) count as busy
 * for everyone else: no instance in them is reused, none is created there.
 *
 * Quota and billing count an instance by its compute share: c/7 of a GPU,
 * rounded down to the milli-GPU (1g = 142, 2g = 285, 3g = 428, 4g = 571,
 * 7g = 1000), so that the instances of one GPU never add up to more than
 * 1000 (rounding to nearest would give 3g + 2g + 1g + 1g = 1001).
 */
#include "core/internal.h"

#include <stdio.h>
#include <string.h>

typedef struct mig_profile {
    const char *name;
    uint8_t compute, size;
    uint8_t starts; /* bit s set: may start at memory slice s */
} mig_profile;

#define MIG_PROFILES 6

typedef struct mig_model {
    const char *name;
    const char *type_hint;  /* substring of the GPU type name */
    int64_t mem_min, mem_max; /* GPU memory range (MiB) that identifies the model */
    mig_profile profiles[MIG_PROFILES];
} mig_model;

static const mig_model models[] = {
    {"A100-40GB", "A100", 30000, 45000,
     {{"1g.5gb", 1, 1, 0x7f}, {"1g.10gb", 1, 2, 0x55}, {"2g.10gb", 2, 2, 0x15},
      {"3g.20gb", 3, 4, 0x11}, {"4g.20gb", 4, 4, 0x01}, {"7g.40gb", 7, 8, 0x01}}},
    {"A100-80GB", "A100", 45001, 90000,
     {{"1g.10gb", 1, 1, 0x7f}, {"1g.20gb", 1, 2, 0x55}, {"2g.20gb", 2, 2, 0x15},
      {"3g.40gb", 3, 4, 0x11}, {"4g.40gb", 4, 4, 0x01}, {"7g.80gb", 7, 8, 0x01}}},
    {"H100-80GB", "H100", 70000, 90000,
     {{"1g.10gb", 1, 1, 0x7f}, {"1g.20gb", 1, 2, 0x55}, {"2g.20gb", 2, 2, 0x15},
      {"3g.40gb", 3, 4, 0x11}, {"4g.40gb", 4, 4, 0x01}, {"7g.80gb", 7, 8, 0x01}}},
    {"H200-141GB", "H200", 130000, 150000,
     {{"1g.18gb", 1, 1, 0x7f}, {"1g.35gb", 1, 2, 0x55}, {"2g.35gb", 2, 2, 0x15},
      {"3g.71gb", 3, 4, 0x11}, {"4g.71gb", 4, 4, 0x01}, {"7g.141gb", 7, 8, 0x01}}},
};

#define N_MODELS ((int)(sizeof models / sizeof *models))

int gp__mig_model_find(const char *gpu_type, int64_t gpu_mem_mib)
{
    for (int m = 0; m < N_MODELS; m++)
        if (strstr(gpu_type, models[m].type_hint) && gpu_mem_mib >= models[m].mem_min &&
            gpu_mem_mib <= models[m].mem_max)
            return m;
    return -1;
}

const char *gp__mig_models_known(void)
{
    return "A100-40GB, A100-80GB, H100-80GB, H200-141GB";
}

int gp__mig_profile_find(int model, const char *name)
{
    if (model < 0 || model >= N_MODELS)
        return -1;
    for (int p = 0; p < MIG_PROFILES; p++)
        if (strcmp(models[model].profiles[p].name, name) == 0)
            return p;
    return -1;
}

bool gp__mig_profile_known(const char *name)
{
    for (int m = 0; m < N_MODELS; m++)
        if (gp__mig_profile_find(m, name) >= 0)
            return true;
    return false;
}

int gp__mig_profile_milli(int model, int profile)
{
    return 1000 * models[model].profiles[profile].compute / 7;
}

/* The smallest compute share among models that know the profile name (for
 * admission before a GPU is chosen; all tables agree where names match). */
int gp__mig_name_milli(const char *name)
{
    for (int m = 0; m < N_MODELS; m++) {
        int p = gp__mig_profile_find(m, name);
        if (p >= 0)
            return gp__mig_profile_milli(m, p);
    }
    return 0;
}

int64_t gp__mig_profile_mem(const gp__gpu *g, int64_t gpu_mem_mib, int profile)
{
    return gpu_mem_mib * models[g->mig_model].profiles[profile].size / 8;
}

static unsigned span(int model, int profile, int start)
{
    return ((1u << models[model].profiles[profile].size) - 1u) << start;
}

/* Memory slices held by instances (busy ones only, or all). */
unsigned gp__mig_mask(const gp__gpu *g, bool busy_only)
{
    unsigned mask = 0;
    for (int i = 0; i < g->n_mig; i++)
        if (!busy_only || g->mig[i].owner)
            mask |= span(g->mig_model, g->mig[i].profile, g->mig[i].start);
    return mask;
}

/* How many instances of each profile could still be created in the free
 * slices `taken` leaves, summed over profiles: what a layout keeps usable. */
static int placeable(int model, unsigned taken)
{
    int total = 0;
    for (int p = 0; p < MIG_PROFILES; p++) {
        unsigned used = taken;
        for (int s = 0; s < 8; s++)
            if ((models[model].profiles[p].starts >> s & 1u) && !(used & span(model, p, s))) {
                used |= span(model, p, s);
                total++;
            }
    }
    return total;
}

unsigned gp__mig_span(const gp__gpu *g, int profile, int start)
{
    return span(g->mig_model, profile, start);
}

/* Claimed slices are someone's already: an instance in them is not reused
 * and nothing is created there, but the claimer (whose own claim is given
 * back while it looks) sees them free. */
gp__mig_choice gp__mig_choose(const gp__gpu *g, int profile, int start, bool may_reconfigure)
{
    gp__mig_choice best = {.kind = GP__MIG_NONE};
    int model = g->mig_model;
    for (int i = 0; i < g->n_mig; i++) /* an idle instance of the profile: no change at all */
        if (!g->mig[i].owner && g->mig[i].profile == profile && (start < 0 || g->mig[i].start == start) &&
            !(span(model, profile, g->mig[i].start) & g->claim_mig)) {
            best.kind = GP__MIG_REUSE;
            best.start = g->mig[i].start;
            best.keeps = placeable(model, gp__mig_mask(g, false) | g->claim_mig);
            return best;
        }
    if (!may_reconfigure)
        return best;
    unsigned all = gp__mig_mask(g, false), busy = gp__mig_mask(g, true) | g->claim_mig;
    for (int s = 0; s < 8; s++) {
        if (!(models[model].profiles[profile].starts >> s & 1u) || (start >= 0 && s != start))
            continue;
        unsigned need = span(model, profile, s);
        if (need & busy)
            continue;
        gp__mig_kind kind = (need & all) ? GP__MIG_DESTROY : GP__MIG_CREATE;
        /* what stays usable: idle instances in the way are destroyed */
        unsigned after = busy | need;
        for (int i = 0; i < g->n_mig; i++)
            if (!g->mig[i].owner && !(span(model, g->mig[i].profile, g->mig[i].start) & need))
                after |= span(model, g->mig[i].profile, g->mig[i].start);
        int keeps = placeable(model, after);
        if (best.kind == GP__MIG_NONE || kind < best.kind || (kind == best.kind && keeps > best.keeps)) {
            best.kind = kind;
            best.start = (uint8_t)s;
            best.keeps = keeps;
        }
    }
    return best;
}

/* Apply a choice for replica owner (job + 1); returns true when the layout
 * changed (instances created or destroyed). */
bool gp__mig_take(gp__gpu *g, int profile, int start, uint32_t owner)
{
    int model = g->mig_model;
    unsigned need = span(model, profile, start);
    for (int i = 0; i < g->n_mig; i++)
        if (g->mig[i].profile == profile && g->mig[i].start == start && !g->mig[i].owner) {
            g->mig[i].owner = owner;
            return false;
        }
    for (int i = g->n_mig; i-- > 0;) /* destroy idle instances in the way */
        if (!g->mig[i].owner && (span(model, g->mig[i].profile, g->mig[i].start) & need))
            g->mig[i] = g->mig[--g->n_mig];
    if (g->n_mig < GP__MIG_MAX)
        g->mig[g->n_mig++] = (gp__mig_instance){(uint8_t)profile, (uint8_t)start, owner};
    return true;
}

/* The replica leaves its instance; the instance stays (idle) for reuse. */
void gp__mig_give(gp__gpu *g, uint32_t owner, int start)
{
    for (int i = 0; i < g->n_mig; i++)
        if (g->mig[i].owner == owner && g->mig[i].start == start) {
            g->mig[i].owner = 0;
            return;
        }
}

bool gp__mig_layout_valid(const gp__gpu *g)
{
    unsigned seen = 0;
    for (int i = 0; i < g->n_mig; i++) {
        const gp__mig_instance *m = &g->mig[i];
        if (m->profile >= MIG_PROFILES || !(models[g->mig_model].profiles[m->profile].starts >> m->start & 1u))
            return false;
        unsigned s = span(g->mig_model, m->profile, m->start);
        if (s & seen || s > 0xffu)
            return false;
        seen |= s;
    }
    return true;
}

void gp__mig_layout_format(const gp__gpu *g, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < g->n_mig && used < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s@%d", i ? "," : "",
                         models[g->mig_model].profiles[g->mig[i].profile].name, g->mig[i].start);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

/* The smallest share that would have held what a job used (see types.h):
 * the first profile of the model's table (they grow in compute, then
 * memory) whose compute sevenths cover sm_pct and whose memory slices
 * cover mem_mib; an MPS percentage, a multiple of 5, covering both. */
bool gp_share_fit(const char *gpu_type, int64_t gpu_mem_mib, int sm_pct, int64_t mem_mib, gp_share_fit_out *out)
{
    memset(out, 0, sizeof *out);
    if (gpu_mem_mib <= 0 || sm_pct < 0 || mem_mib < 0)
        return false;
    int64_t mem_pct = (mem_mib * 100 + gpu_mem_mib - 1) / gpu_mem_mib;
    int64_t need = sm_pct > mem_pct ? sm_pct : mem_pct;
    need = (need + 4) / 5 * 5;
    out->mps_pct = (int)(need < 5 ? 5 : need > 100 ? 100 : need);
    int m = gp__mig_model_find(gpu_type, gpu_mem_mib);
    for (int p = 0; m >= 0 && p < MIG_PROFILES; p++) {
        const mig_profile *pr = &models[m].profiles[p];
        if (pr->compute * 100 >= sm_pct * 7 && gpu_mem_mib * pr->size / 8 >= mem_mib) {
            snprintf(out->mig, sizeof out->mig, "%s", pr->name);
            break;
        }
    }
    return true;
}
