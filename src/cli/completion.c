/* completion.c - `gpupool completion bash|zsh`: shell completion scripts.
 *
 * Generated from the command table (main.c), so they know exactly the
 * commands and flags that --help shows: a command's flags are the "--"
 * words of its usage text, its subcommands the lower-case words that
 * follow "gpupool COMMAND" at the start of a usage line ("quota set",
 * "token create|list|revoke", "completion bash|zsh").
 *
 *     source <(gpupool completion bash)      # ~/.bashrc
 *     source <(gpupool completion zsh)       # ~/.zshrc (through bashcompinit)
 *
 * Completes the command, then the command's subcommands and flags; other
 * words (paths, ids, files) fall back to file names.
 */
#include "cli/commands.h"
#include "cli/suggest.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static const char GLOBAL_FLAGS[] = "--server --token --token-file --cacert --wait-leader --json --help --version";

/* The subcommand words of one usage line "... gpupool CMD WORD[|WORD...]". */
static void print_line_subcommands(const char *line, size_t len, const char *cmd)
{
    char prefix[80];
    snprintf(prefix, sizeof prefix, "gpupool %s ", cmd);
    const char *at = strstr(line, prefix);
    if (!at || (size_t)(at - line) >= len)
        return;
    const char *w = at + strlen(prefix);
    while (islower((unsigned char)*w) || *w == '|' || *w == '-') {
        if (*w == '|')
            putchar(' ');
        else
            putchar(*w);
        w++;
    }
    putchar(' ');
}

static void print_subcommands(const gp_command *k)
{
    for (const char *line = k->usage; *line;) {
        size_t len = strcspn(line, "\n");
        if (strncmp(line, "usage: ", 7) == 0 || strncmp(line, "       gpupool", 14) == 0)
            print_line_subcommands(line, len, k->name);
        line += len + (line[len] == '\n');
    }
}

static void print_flags(const gp_command *k)
{
    char buf[2048];
    const char *flags[64];
    size_t n = gp_usage_flags(k->usage, buf, sizeof buf, flags, 64);
    for (size_t i = 0; i < n; i++)
        printf("%s ", flags[i]);
    printf("--help");
}

static void print_bash(void)
{
    printf("# gpupool completion for bash: source <(gpupool completion bash)\n"
           "_gpupool() {\n"
           "    local cur=${COMP_WORDS[COMP_CWORD]} cmd= i\n"
           "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
           "        case ${COMP_WORDS[i]} in\n"
           "            --server|--token|--token-file|--cacert|--wait-leader) ((i++)) ;;\n"
           "            -*) ;;\n"
           "            *) cmd=${COMP_WORDS[i]}; break ;;\n"
           "        esac\n"
           "    done\n"
           "    local words\n"
           "    case $cmd in\n"
           "        '') words=\"");
    for (const gp_command *k = GP_COMMANDS; k->name; k++)
        printf("%s ", k->name);
    printf("%s\" ;;\n", GLOBAL_FLAGS);
    for (const gp_command *k = GP_COMMANDS; k->name; k++) {
        printf("        %s) words=\"", k->name);
        print_subcommands(k);
        print_flags(k);
        printf(" %s\" ;;\n", GLOBAL_FLAGS);
    }
    printf("        *) words= ;;\n"
           "    esac\n"
           "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
           "}\n"
           "complete -o default -F _gpupool gpupool\n");
}

int gp_cmd_completion(gp_client *c, int argc, char **argv)
{
    (void)c;
    if (argc != 2 || (strcmp(argv[1], "bash") != 0 && strcmp(argv[1], "zsh") != 0))
        return gp_usage_error("completion", "usage: gpupool completion bash|zsh");
    if (strcmp(argv[1], "zsh") == 0)
        printf("# gpupool completion for zsh: source <(gpupool completion zsh)\n"
               "autoload -U +X bashcompinit && bashcompinit\n");
    print_bash();
    return GP_EXIT_OK;
}
