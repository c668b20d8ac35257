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

#endif
