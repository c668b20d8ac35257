/* log_reads.c - the audited reads of other users' job logs kept, so that
 * one reader adds a row per ten minutes of reading (see log_reads.h). */
#include "server/log_reads.h"

#include <stdio.h>
#include <string.h>

void gp_log_reads_init(gp_log_reads *l)
{
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->lock, NULL);
}

void gp_log_reads_destroy(gp_log_reads *l)
{
    pthread_mutex_destroy(&l->lock);
}

/* Under lock: the kept read of (token, job, replica), NULL when none. */
static gp_log_read *find(gp_log_reads *l, const char *token_id, uint64_t job, int replica)
{
    for (int i = 0; i < l->n; i++)
        if (l->kept[i].job == job && l->kept[i].replica == replica && strcmp(l->kept[i].token_id, token_id) == 0)
            return &l->kept[i];
    return NULL;
}

/* Under lock, a full table: the read audited longest ago. */
static gp_log_read *oldest(gp_log_reads *l)
{
    gp_log_read *k = &l->kept[0];
    for (int i = 1; i < l->n; i++)
        if (l->kept[i].audited < k->audited)
            k = &l->kept[i];
    return k;
}

bool gp_log_reads_due(gp_log_reads *l, const char *token_id, uint64_t job, int replica, int64_t now)
{
    pthread_mutex_lock(&l->lock);
    const gp_log_read *k = find(l, token_id, job, replica);
    bool due = !k || now - k->audited >= GP_LOG_READS_EVERY_S || now < k->audited;
    pthread_mutex_unlock(&l->lock);
    return due;
}

void gp_log_reads_done(gp_log_reads *l, const char *token_id, uint64_t job, int replica, int64_t now)
{
    pthread_mutex_lock(&l->lock);
    gp_log_read *k = find(l, token_id, job, replica);
    if (!k && l->n < GP_LOG_READS_KEPT)
        k = &l->kept[l->n++];
    else if (!k)
        k = oldest(l);
    snprintf(k->token_id, sizeof k->token_id, "%s", token_id);
    k->job = job;
    k->replica = replica;
    k->audited = now;
    pthread_mutex_unlock(&l->lock);
}
