/* table.c - aligned text tables (see table.h). */
#include "cli/table.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

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

static void csv_cell(const char *c, FILE *out)
{
    if (!strpbrk(c, ",\"\r\n")) {
        fputs(c, out);
        return;
    }
    fputc('"', out);
    for (; *c; c++) {
        if (*c == '"')
            fputc('"', out);
        fputc(*c, out);
    }
    fputc('"', out);
}

void gp_table_print_csv(gp_table *t, FILE *out)
{
    for (size_t r = 0; r < t->rows; r++)
        for (int i = 0; i < t->ncols; i++) {
            char *c = t->cells[r * (size_t)t->ncols + (size_t)i];
            csv_cell(c ? c : "", out);
            fputc(i == t->ncols - 1 ? '\n' : ',', out);
            free(c);
        }
    free(t->cells);
    memset(t, 0, sizeof *t);
}

/* The widths of the columns, and of the widest line (the last column unpadded, two spaces between). */
static size_t table_widths(const gp_table *t, size_t *width)
{
    memset(width, 0, (size_t)t->ncols * sizeof *width);
    for (size_t r = 0; r < t->rows; r++)
        for (int i = 0; i < t->ncols; i++) {
            const char *c = t->cells[r * (size_t)t->ncols + (size_t)i];
            size_t n = c ? strlen(c) : 0;
            if (n > width[i])
                width[i] = n;
        }
    size_t line = 0;
    for (int i = 0; i < t->ncols; i++)
        line += width[i] + (i < t->ncols - 1 ? 2 : 0);
    return line;
}

/* Removes column col from every row. */
static void table_drop_column(gp_table *t, int col)
{
    size_t out = 0;
    for (size_t r = 0; r < t->rows; r++)
        for (int i = 0; i < t->ncols; i++) {
            char *c = t->cells[r * (size_t)t->ncols + (size_t)i];
            if (i == col)
                free(c);
            else
                t->cells[out++] = c;
        }
    t->ncols--;
}

/* Cuts the last column's cells to keep characters ("..." ending a cut one). */
static void table_cut_last(gp_table *t, size_t keep)
{
    for (size_t r = 0; r < t->rows; r++) {
        char *c = t->cells[r * (size_t)t->ncols + (size_t)(t->ncols - 1)];
        if (!c || strlen(c) <= keep)
            continue;
        if (keep > 3)
            memcpy(c + keep - 3, "...", 3);
        c[keep] = '\0';
    }
}

void gp_table_fit(gp_table *t, size_t width, const int *drop)
{
    size_t w[32];
    if (width == 0 || t->ncols > 32)
        return;
    /* drop's indices name the columns as they were: count the ones already gone before each */
    int gone[32], ngone = 0;
    for (const int *d = drop; d && *d >= 0 && table_widths(t, w) > width && t->ncols > 1; d++) {
        int col = *d;
        for (int k = 0; k < ngone; k++)
            col -= gone[k] < *d ? 1 : 0;
        table_drop_column(t, col);
        gone[ngone++] = *d;
    }
    if (table_widths(t, w) <= width)
        return;
    size_t before = 0;
    for (int i = 0; i < t->ncols - 1; i++)
        before += w[i] + 2;
    table_cut_last(t, width > before ? width - before : 0);
}

size_t gp_table_width(void)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) == 1 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *columns = getenv("COLUMNS");
    long n = columns ? strtol(columns, NULL, 10) : 0;
    return n > 0 ? (size_t)n : 0;
}
