/* table.h - aligned text tables for the CLI's human output.
 *
 * Rows are collected first so every column gets the width of its widest
 * cell; the last column is not padded (it usually holds a long reason).
 *
 * Ownership: the table copies cells; gp_table_print prints and frees.
 */
#ifndef GP_CLI_TABLE_H
#define GP_CLI_TABLE_H

#include <stddef.h>
#include <stdio.h>

typedef struct gp_table {
    int ncols;
    char **cells; /* rows * ncols, row-major */
    size_t rows, cap;
} gp_table;

/* The header is the first row. */
void gp_table_init(gp_table *t, int ncols, const char *const *header);
/* ncols strings (NULL prints "-"). */
void gp_table_add(gp_table *t, const char *const *cells);
void gp_table_print(gp_table *t, FILE *out);
/* The same rows as CSV (RFC 4180: a cell holding a comma, quote or line
 * break is quoted, its quotes doubled), header first; frees like
 * gp_table_print. */
void gp_table_print_csv(gp_table *t, FILE *out);
/* Makes every printed line at most width characters (0: no limit): while
 * the widest line is wider, drops the next column of drop (column indices,
 * -1 ends the list, the least needed first), then cuts the last column's
 * cells to what is left, a cut cell ending in "..." (`gpupool top` on an
 * 80-column terminal).  The header row goes with its column. */
void gp_table_fit(gp_table *t, size_t width, const int *drop);
/* The width a table printed to stdout may fill: the terminal's columns
 * when stdout is one, else $COLUMNS when set, else 0 (no limit: a pipe
 * or a file gets whole lines). */
size_t gp_table_width(void);

#endif
