/* plots.c - gnuplot scripts and running them (see plots.h).
 *
 * Every script sets one look (sans font, grid, key outside at the top) so
 * pictures from different runs compare at a glance.  gnuplot runs once per
 * script from inside the output folder, so scripts name their CSV files
 * without a path and can be re-run by hand: `cd OUT && gnuplot NAME.gp`.
 */
#include "sim/plots.h"

#include <stdlib.h>
#include <string.h>

#include "sim/report.h"

FILE *gp_sim_plot_begin(const char *dir, const char *name, const char *title, const char *xlabel,
                        const char *ylabel, gp_error *err)
{
    char file[256];
    snprintf(file, sizeof file, "%s.gp", name);
    FILE *f = gp_sim_open_out(dir, file, err);
    if (!f)
        return NULL;
    fprintf(f,
            "# %s - written by gpupool-sim; run: gnuplot %s.gp\n"
            "set datafile separator ','\n"
            "set title \"%s\" noenhanced\n"
            "set xlabel \"%s\"\nset ylabel \"%s\"\n"
            "set grid\nset key outside top center horizontal noenhanced\n",
            name, name, title, xlabel, ylabel);
    return f;
}

void gp_sim_plot_both(FILE *script, const char *name, const char *commands)
{
    fprintf(script, "set terminal pngcairo size 1000,620 font 'sans,10'\nset output '%s.png'\n%s\n", name, commands);
    fprintf(script, "set terminal svg size 1000,620 font 'sans,10' background rgb 'white'\nset output '%s.svg'\n%s\n",
            name, commands);
    fprintf(script, "unset output\n");
}

/* The folder quoted for the shell: 'a'\''b'. */
static void shell_quote(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    out[n++] = '\'';
    for (; *s && n + 5 < cap; s++) {
        if (*s == '\'') {
            memcpy(out + n, "'\\''", 4);
            n += 4;
        } else {
            out[n++] = *s;
        }
    }
    out[n++] = '\'';
    out[n] = '\0';
}

bool gp_sim_plots_run(const char *dir, FILE *warn)
{
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        if (warn)
            fprintf(warn, "gpupool-sim: gnuplot is not installed (Debian: gnuplot-nox); the .gp scripts are in %s\n",
                    dir);
        return false;
    }
    char quoted[1100], cmd[1300];
    shell_quote(dir, quoted, sizeof quoted);
    snprintf(cmd, sizeof cmd, "cd %s && for f in *.gp; do gnuplot \"$f\" || exit 1; done 2>plots.log", quoted);
    if (system(cmd) != 0) {
        if (warn)
            fprintf(warn, "gpupool-sim: gnuplot failed; see %s/plots.log\n", dir);
        return false;
    }
    return true;
}
