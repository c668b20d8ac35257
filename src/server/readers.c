/* readers.c - the reader connections' pool (readers.h). */
#include "server/readers.h"

void gp_readers_init(gp_readers *r, const char *url)
{
    pthread_mutex_init(&r->lock, NULL);
    r->n_free = 0;
    r->url = url;
}

gp_store *gp_readers_take(gp_readers *r, gp_error *err)
{
    gp_store *s = NULL;
    pthread_mutex_lock(&r->lock);
    if (r->n_free > 0)
        s = r->free_list[--r->n_free];
    pthread_mutex_unlock(&r->lock);
    if (!s && gp_store_open(r->url, true, &s, err) != GP_OK)
        return NULL;
    return s;
}

void gp_readers_give(gp_readers *r, gp_store *s)
{
    if (!s)
        return;
    if (gp_store_broken(s)) { /* the database restarted: the next take opens a fresh one */
        gp_store_close(s);
        return;
    }
    pthread_mutex_lock(&r->lock);
    if (r->n_free < (int)(sizeof r->free_list / sizeof r->free_list[0])) {
        r->free_list[r->n_free++] = s;
        s = NULL;
    }
    pthread_mutex_unlock(&r->lock);
    gp_store_close(s);
}

void gp_readers_close(gp_readers *r)
{
    for (int i = 0; i < r->n_free; i++)
        gp_store_close(r->free_list[i]);
    r->n_free = 0;
    pthread_mutex_destroy(&r->lock);
}
