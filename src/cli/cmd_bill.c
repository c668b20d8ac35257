/* cmd_bill.c - `gpupool prices` and `gpupool bill` (docs/cli.md).
 *
 *     gpupool prices                                   the price table
 *     gpupool prices set --effective T --gpu H100=2.50[,A100=1.20] [--premium nvlink=1.10,block=1.25]
 *                        [--currency USD] [--backdate]  (admin)
 *     gpupool prices mode ORG chargeback|showback       (admin)
 *     gpupool bill [--period 2026-11] [--tenant P] [--hourly] [-o table|csv|json]   (this UTC month by default)
 *     gpupool bill --ledger L.jsonl --prices P.json --period 2026-11 [--as-of EPOCH] [...]
 *
 * The second form of `bill` is offline: it reads a ledger export (one
 * record per line, as `gpupool ledger` or `gpupool-sim --ledger` write
 * it) and a price table (as GET /v1/prices answers it) and computes the
 * bill with the same code as gpupoold (metering/bill.h), so the two
 * agree to the digit; it talks to no server and shows every tenant and
 * the fleet.
 */
#include "cli/commands.h"
#include "cli/table.h"
#include "cli/timefmt.h"
#include "metering/bill.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- prices ---- */

static const char PRICES_USAGE[] =
    "usage: gpupool prices | prices set --effective TIME --gpu MODEL=PRICE[,...] [--premium nvlink=F,block=F]"
    " [--currency CUR] [--backdate] | prices mode ORG chargeback|showback";

static void prices_print(const json_t *table)
{
    static const char *const header[] = {"EFFECTIVE (UTC)", "GPU TYPE", "PRICE/GPU-H", "NVLINK", "BLOCK"};
    gp_table t;
    gp_table_init(&t, 5, header);
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(table, "versions"), i, v) {
        time_t when = (time_t)json_integer_value(json_object_get(v, "effective"));
        char at[32];
        strftime(at, sizeof at, "%Y-%m-%d %H:%M:%S", gmtime(&when));
        json_t *premium = json_object_get(v, "premium");
        const char *nvlink = json_string_value(json_object_get(premium, "nvlink"));
        const char *block = json_string_value(json_object_get(premium, "block"));
        const char *model;
        json_t *price;
        json_object_foreach(json_object_get(v, "gpu_types"), model, price) {
            const char *row[] = {at, model, json_string_value(price), nvlink ? nvlink : "1", block ? block : "1"};
            gp_table_add(&t, row);
        }
    }
    printf("currency %s\n", json_string_value(json_object_get(table, "currency")));
    gp_table_print(&t, stdout);
    const char *org;
    json_t *mode;
    json_object_foreach(json_object_get(table, "modes"), org, mode)
        printf("%s: %s\n", org, json_string_value(mode));
    printf("(orgs not listed: showback)\n");
}

/* "A=1,B=2" into obj as {"A": "1", "B": "2"}. */
static bool pairs_add(json_t *obj, const char *text)
{
    char *copy = strdup(text), *save = NULL;
    bool ok = copy != NULL;
    for (char *item = copy ? strtok_r(copy, ",", &save) : NULL; ok && item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        ok = eq && eq != item && eq[1];
        if (ok) {
            *eq = '\0';
            json_object_set_new(obj, item, json_string(eq + 1));
        }
    }
    free(copy);
    return ok;
}

static int prices_set(gp_client *c, int argc, char **argv)
{
    static const struct option opts[] = {{"effective", required_argument, NULL, 'e'},
                                         {"gpu", required_argument, NULL, 'g'},
                                         {"premium", required_argument, NULL, 'p'},
                                         {"currency", required_argument, NULL, 'c'},
                                         {"backdate", no_argument, NULL, 'b'},
                                         {NULL, 0, NULL, 0}};
    json_t *body = json_pack("{s:{}, s:{}}", "gpu_types", "premium");
    bool backdate = false, ok = true;
    int ch;
    optind = 0;
    while (ok && (ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        int64_t when;
        if (ch == 'e' && (ok = gp_time_parse(optarg, (int64_t)time(NULL), &when)))
            json_object_set_new(body, "effective", json_integer(when));
        else if (ch == 'g' || ch == 'p')
            ok = pairs_add(json_object_get(body, ch == 'g' ? "gpu_types" : "premium"), optarg);
        else if (ch == 'c')
            json_object_set_new(body, "currency", json_string(optarg));
        else if (ch == 'b')
            backdate = true;
        else
            ok = false;
    }
    if (!ok || optind != argc || !json_object_get(body, "effective")) {
        json_decref(body);
        return gp_usage_error("prices", "%s", PRICES_USAGE);
    }
    gp_response resp;
    char at[64];
    int rc = gp_client_run(c, "PUT", backdate ? "/v1/prices?backdate=true" : "/v1/prices", body, &resp);
    if (rc == GP_EXIT_OK && !c->json)
        printf("price version effective %s added\n",
               gp_time_human(json_integer_value(json_object_get(resp.body, "effective")), (int64_t)time(NULL), at,
                             sizeof at));
    gp_response_free(&resp);
    json_decref(body);
    return rc;
}

static int prices_mode(gp_client *c, const char *org, const char *mode)
{
    char path[512];
    if (strlen(org) >= sizeof path - 32 || strchr(org, '/') || strchr(org, '?'))
        return gp_usage_error("prices", "ORG must be a top-level tenant, got %s", org);
    snprintf(path, sizeof path, "/v1/prices/modes/%s", org);
    json_t *body = json_pack("{s:s}", "mode", mode);
    gp_response resp;
    int rc = gp_client_run(c, "PUT", path, body, &resp);
    if (rc == GP_EXIT_OK && !c->json)
        printf("%s bills %s\n", org, mode);
    gp_response_free(&resp);
    json_decref(body);
    return rc;
}

int gp_cmd_prices(gp_client *c, int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "set") == 0)
        return prices_set(c, argc - 1, argv + 1);
    if (argc == 4 && strcmp(argv[1], "mode") == 0)
        return prices_mode(c, argv[2], argv[3]);
    if (argc != 1)
        return gp_usage_error("prices", "%s", PRICES_USAGE);
    gp_response resp;
    int rc = gp_client_run(c, "GET", "/v1/prices", NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json)
        prices_print(resp.body);
    gp_response_free(&resp);
    return rc;
}

/* ---- bill ---- */

static const char BILL_USAGE[] =
    "usage: gpupool bill [--period YYYY-MM] [--tenant PATH] [--hourly] [-o table|csv|json]\n"
    "       gpupool bill --ledger FILE.jsonl --prices FILE.json [--period YYYY-MM] [--as-of EPOCH] [--tenant PATH]"
    " [--hourly] [-o ...]";

typedef struct bill_args {
    const char *period, *tenant, *ledger, *prices, *output;
    char this_month[16]; /* the period when --period is left out: the current UTC month */
    bool hourly, has_as_of;
    long long as_of;
} bill_args;

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static void gpu_hours(const json_t *mgs, char *buf)
{
    gp_money_format((gp_i128)json_integer_value(mgs) * 10, 36, buf);
}

static void bill_print(const json_t *bill)
{
    static const char *const header[] = {"TENANT", "KIND", "GPU TYPE", "TOPOLOGY", "GPU-HOURS", "AMOUNT"};
    static const char *const totals[] = {"TENANT", "MODE", "AMOUNT", "SUBTOTAL", "DUE"};
    gp_table lines, sums;
    gp_table_init(&lines, 6, header);
    gp_table_init(&sums, 5, totals);
    size_t i, k;
    json_t *t, *l;
    json_array_foreach(json_object_get(bill, "tenants"), i, t) {
        json_array_foreach(json_object_get(t, "lines"), k, l) {
            const char *row[] = {str(t, "tenant"), str(l, "kind"), str(l, "gpu_type"), str(l, "topology"),
                                 str(l, "gpu_hours"), str(l, "amount")};
            gp_table_add(&lines, row);
        }
        const char *row[] = {str(t, "tenant"), str(t, "mode"), str(t, "amount"), str(t, "subtotal"), str(t, "due")};
        gp_table_add(&sums, row);
    }
    char as_of[64];
    printf("bill %s (%s), as of %s\n", str(bill, "period"), str(bill, "currency"),
           gp_time_human(json_integer_value(json_object_get(bill, "as_of")), (int64_t)time(NULL), as_of, sizeof as_of));
    gp_table_print(&lines, stdout);
    putchar('\n');
    gp_table_print(&sums, stdout);
    json_t *fleet = json_object_get(bill, "fleet");
    if (!fleet)
        return;
    static const char *const fields[] = {"physical", "whole", "mig", "mps", "timeslice", "idle_in_guarantees",
                                         "idle_unowned"};
    static const char *const fheader[] = {"GPU TYPE (GPU-H)", "PHYSICAL", "WHOLE", "MIG", "MPS", "TIMESLICE",
                                          "IDLE IN GUARANTEES", "IDLE UNOWNED"};
    gp_table f;
    gp_table_init(&f, 8, fheader);
    json_array_foreach(fleet, i, t) {
        char cells[7][48];
        const char *row[8] = {str(t, "gpu_type")};
        for (int j = 0; j < 7; j++) {
            gpu_hours(json_object_get(t, fields[j]), cells[j]);
            row[j + 1] = cells[j];
        }
        gp_table_add(&f, row);
    }
    putchar('\n');
    gp_table_print(&f, stdout);
}

/* The bill as JSON, keys sorted (what -o json prints online and offline alike). */
static void print_json(const json_t *bill)
{
    json_dumpf(bill, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
    fputc('\n', stdout);
}

static bool bill_parse(int argc, char **argv, bill_args *a)
{
    static const struct option opts[] = {
        {"period", required_argument, NULL, 'p'}, {"tenant", required_argument, NULL, 't'},
        {"hourly", no_argument, NULL, 'h'},       {"ledger", required_argument, NULL, 'l'},
        {"prices", required_argument, NULL, 'P'}, {"as-of", required_argument, NULL, 'a'},
        {NULL, 0, NULL, 0}};
    int ch;
    optind = 0;
    memset(a, 0, sizeof *a);
    a->output = "table";
    while ((ch = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
        char *end = NULL;
        switch (ch) {
        case 'p': a->period = optarg; break;
        case 't': a->tenant = optarg; break;
        case 'h': a->hourly = true; break;
        case 'l': a->ledger = optarg; break;
        case 'P': a->prices = optarg; break;
        case 'o': a->output = optarg; break;
        case 'a':
            a->as_of = strtoll(optarg, &end, 10);
            a->has_as_of = end && *end == '\0' && end != optarg;
            if (!a->has_as_of)
                return false;
            break;
        default: return false;
        }
    }
    bool output_ok = !strcmp(a->output, "table") || !strcmp(a->output, "csv") || !strcmp(a->output, "json");
    if (!a->period) {
        time_t now = time(NULL);
        struct tm tm;
        strftime(a->this_month, sizeof a->this_month, "%Y-%m", gmtime_r(&now, &tm));
        a->period = a->this_month;
    }
    return optind == argc && output_ok && !a->ledger == !a->prices && (a->ledger || !a->has_as_of);
}

/* Feeds every line of the ledger export (path ctx) to the bill. */
static gp_err ledger_source(void *ctx, gp_bill *b, int64_t from, int64_t as_of, gp_error *err)
{
    (void)from; /* the file's every record: the bill keeps what matters */
    (void)as_of;
    const char *path = ctx;
    FILE *f = fopen(path, "r");
    if (!f)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "ledger", "cannot open %s", path);
    char *line = NULL;
    size_t cap = 0;
    long n = 0;
    gp_err rc = GP_OK;
    while (rc == GP_OK && getline(&line, &cap, f) > 0) {
        n++;
        if (line[0] == '\n')
            continue;
        json_error_t jerr;
        json_t *rec = json_loads(line, 0, &jerr);
        gp_bill_record r;
        rc = rec ? gp_bill_record_from_json(rec, &r, err)
                 : gp_error_set(err, GP_ERR_INVALID, "ledger", "%s line %ld is not JSON: %s", path, n, jerr.text);
        if (rc == GP_OK)
            rc = gp_bill_add(b, &r, err);
        json_decref(rec);
    }
    free(line);
    fclose(f);
    return rc;
}

/* The offline bill: JSON into *json or CSV into *csv. */
static gp_err bill_offline(const bill_args *a, json_t **json, char **csv, gp_error *err)
{
    json_error_t jerr;
    json_t *prices = json_load_file(a->prices, 0, &jerr);
    if (!prices)
        return gp_error_set(err, GP_ERR_INVALID, "prices", "%s: %s", a->prices, jerr.text);
    int64_t from = 0, to = 0;
    gp_price_month_parse(a->period, &from, &to, NULL);
    gp_bill_query q = {.period = a->period, .as_of = a->has_as_of ? a->as_of : to, .tenant = a->tenant,
                       .fleet = true, .hourly = a->hourly};
    gp_err rc = gp_bill_run(prices, &q, ledger_source, (void *)a->ledger, json, csv, err);
    json_decref(prices);
    return rc;
}

static int bill_online(gp_client *c, const bill_args *a, bool csv)
{
    char path[1024] = "/v1/bill";
    gp_query_add(c, path, sizeof path, "period", a->period);
    gp_query_add(c, path, sizeof path, "tenant", a->tenant);
    gp_query_add(c, path, sizeof path, "hourly", a->hourly ? "1" : NULL);
    gp_query_add(c, path, sizeof path, "format", csv ? "csv" : NULL);
    gp_response resp;
    int rc = gp_client_call(c, "GET", path, NULL, NULL, 0, &resp);
    if (rc == GP_EXIT_OK && csv && resp.status == 200 && resp.text)
        fputs(resp.text, stdout);
    else if (rc == GP_EXIT_OK && (rc = gp_client_check(&resp)) == GP_EXIT_OK && (c->json || !strcmp(a->output, "json")))
        print_json(resp.body);
    else if (rc == GP_EXIT_OK)
        bill_print(resp.body);
    gp_response_free(&resp);
    return rc;
}

int gp_cmd_bill(gp_client *c, int argc, char **argv)
{
    bill_args a;
    if (!bill_parse(argc, argv, &a))
        return gp_usage_error("bill", "%s", BILL_USAGE);
    bool csv = strcmp(a.output, "csv") == 0;
    if (!a.ledger)
        return bill_online(c, &a, csv);
    json_t *json = NULL;
    char *text = NULL;
    gp_error err;
    if (bill_offline(&a, &json, csv ? &text : NULL, &err) != GP_OK) {
        fprintf(stderr, "gpupool bill: %s\n", err.message);
        return err.code == GP_ERR_NOT_FOUND ? GP_EXIT_NOT_FOUND : GP_EXIT_INVALID;
    }
    if (csv)
        fputs(text, stdout);
    else if (c->json || !strcmp(a.output, "json"))
        print_json(json);
    else
        bill_print(json);
    free(text);
    json_decref(json);
    return GP_EXIT_OK;
}
