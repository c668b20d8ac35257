/* table.c - aligned text tables (see table.h). */
#include "cli/table.h"

#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

void gp_table_init(gp_table *t, int ncols, const char *const *header)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    gp_table_add(t, header);
}

void gp_table_add(gp_table *t, const char *const *cells)
{
    char **grown = gp_grow(t->cells, &t->cap, t->rows + 1, (size_t)t->ncols * sizeof *grown);
    if (!grown)
        return;
    t->cells = grown;
    for (int i = 0; i < t->ncols; i++)
        t->cells[t->rows * (size_t)t->ncols + (size_t)i] = strdup(cells[i] ? cells[i] : "-");
    t->rows++;
}

void gp_table_print(gp_table *t, FILE *out)
{
    size_t width[32] = {0};
    for (size_t r = 0; r < t->rows; r++)
        for (int i = 0; i < t->ncols && i < 32; i++) {
            const char *c = t->cells[r * (size_t)t->ncols + (size_t)i];
            size_t n = c ? strlen(c) : 0;
            if (n > width[i])
                width[i] = n;
        }
    for (size_t r = 0; r < t->rows; r++) {
        for (int i = 0; i < t->ncols; i++) {
            const char *c = t->cells[r * (size_t)t->ncols + (size_t)i];
            if (i == t->ncols - 1)
                fprintf(out, "%s\n", c ? c : "");
            else
                fprintf(out, "%-*s  ", (int)width[i], c ? c : "");
            free(t->cells[r * (size_t)t->ncols + (size_t)i]);
        }
    }
    free(t->cells);
    memset(t, 0, sizeof *t);
}
