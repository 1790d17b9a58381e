// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * offnic-ctl: the NIC from user space (liboffnic_ctl). Commands:
 *   info | blocks | read OFFSET | write OFFSET VALUE | counters | queues | fw | fw-log |
 *   cache | conns
 * -d DEVICE picks the function (default /dev/offnic0). Exit 0 on success, 1 on an error,
 * 2 on bad usage, 3 when the NIC lacks the block a command reads (e.g. conns without a
 * TCP engine).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "liboffnic_ctl.h"
#include "../../firmware/include/fw_proto.h"

static int usage(void)
{
	fprintf(stderr, "usage: offnic-ctl [-d /dev/offnicN] info|blocks|read OFF|write OFF VAL|"
		"counters|queues|fw|fw-log|cache|conns\n");
	return 2;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "offnic-ctl: %s: %s\n", what, strerror(-err));
	return err == -ENOENT ? 3 : 1;
}

static int cmd_info(struct octl *c)
{
	uint32_t p;

	printf("bus: %s\nuapi: %u\nbar0: %u bytes\nports: %u\ncounters: %u\n", c->info.bus,
	       c->info.version, c->info.bar_len, c->info.n_ports, c->info.n_counters);
	for (p = 0; p < c->info.n_ports && p < 2; p++)
		printf("port %u: %s\n", p, c->info.ifname[p]);
	return 0;
}

static int cmd_blocks(struct octl *c)
{
	struct octl_block b[OCTL_MAX_BLOCKS];
	int n = octl_blocks(c, b, OCTL_MAX_BLOCKS), i;

	if (n < 0)
		return fail("register chain", n);
	for (i = 0; i < n; i++)
		printf("%#08x %-10s type %#010x version %u.%u\n", b[i].offset,
		       octl_block_name(b[i].type), b[i].type, b[i].version >> 16,
		       b[i].version & 0xffff);
	return 0;
}

static int cmd_counters(struct octl *c)
{
	struct offnic_uapi_counter ctr;
	uint32_t i;
	int err;

	for (i = 0; i < c->info.n_counters; i++) {
		err = octl_counter(c, i, &ctr);
		if (err)
			return fail("counter", err);
		if (ctr.port == ~0u)
			printf("%s: %" PRIu64 "\n", ctr.name, (uint64_t)ctr.value);
		else
			printf("port%u.%s: %" PRIu64 "\n", ctr.port, ctr.name, (uint64_t)ctr.value);
	}
	return 0;
}

/* One line per queue: "tx 3: size 1024 on port 1 prod 17 cons 17" (sizes from log_size) */
static int cmd_queues(struct octl *c)
{
	struct octl_queue q[64];
	int tx, n, k;

	for (tx = 1; tx >= 0; tx--) {
		n = octl_queues(c, tx, q, 64);
		if (n < 0)
			return fail(tx ? "TX queues" : "RX queues", n);
		for (k = 0; k < n; k++)
			printf("%s %d: size %u %s port %u prod %u cons %u%s\n", tx ? "tx" : "rx", k,
			       1u << q[k].log_size, q[k].enabled ? "on" : "off", q[k].port, q[k].prod,
			       q[k].cons, q[k].error ? " ERROR" : "");
	}
	return 0;
}

static int cmd_fw(struct octl *c)
{
	struct octl_fw fw;
	int err = octl_fw_state(c, &fw);

	if (err)
		return fail("firmware (fw block)", err);
	printf("fw_version: %u.%u.%u\nstate: %u %s\nstatus: %#x%s\nheartbeat: %u\nlog_records: %u\n"
	       "imem: %u bytes\ndmem: %u bytes\n", fw.fw_version >> 16, (fw.fw_version >> 8) & 0xff,
	       fw.fw_version & 0xff, fw.state, octl_fw_state_name(fw.state), fw.status,
	       fw.status & 2 ? " (trapped)" : "", fw.heartbeat, fw.log_head, fw.imem_bytes,
	       fw.dmem_bytes);
	return 0;
}

static const char *log_code_name(uint32_t code)
{
	static const char *const names[] = { "?", "boot", "nic", "lc_init", "soft_limit", "cmd",
					     "watermarks", "clamped" };

	return code < sizeof(names) / sizeof(names[0]) ? names[code] : "?";
}

static int cmd_fw_log(struct octl *c)
{
	struct octl_fw_log_rec rec[OCTL_FW_LOG_RECORDS];
	int n = octl_fw_log(c, rec, OCTL_FW_LOG_RECORDS), i;
	uint32_t a;

	if (n < 0)
		return fail("firmware log", n);
	for (i = 0; i < n; i++) {
		printf("#%u %u us %s(%u)", rec[i].seq, rec[i].time_us, log_code_name(rec[i].code),
		       rec[i].code);
		for (a = 0; a < rec[i].nargs && a < 4; a++)
			printf(" %#x", rec[i].arg[a]);
		printf("\n");
	}
	return 0;
}

static int cmd_cache(struct octl *c)
{
	struct octl_cache s;
	int err = octl_cache_state(c, &s);

	if (err)
		return fail("payload cache (cache block)", err);
	printf("onchip_bytes: %u\ndram_bytes: %u\nappends: %u\ninserts: %u\nhits_onchip: %u\n"
	       "hits_dram: %u\nhost_bytes: %" PRIu64 "\ncache_bytes: %" PRIu64 "\ninsert_bytes: %"
	       PRIu64 "\nrange_errors: %u\nread_errors: %u\nwrite_errors: %u\n", s.onchip_bytes,
	       s.dram_bytes, s.appends, s.inserts, s.hits_onchip, s.hits_dram, s.host_bytes,
	       s.cache_bytes, s.insert_bytes, s.range_errors, s.read_errors, s.write_errors);
	return 0;
}

static int cmd_conns(struct octl *c)
{
	struct octl_conns s;
	int err = octl_conns(c, &s);

	if (err == -ENOENT) {
		printf("offloaded connections: none (unsupported: this NIC has no TCP engine, "
		       "no toe block in its register chain)\n");
		return 3;
	}
	if (err)
		return fail("connections (toe block)", err);
	printf("offloaded connections: %u (peak %u; table inserts %u, deletes %u)\n", s.connections,
	       s.peak, s.table_inserts, s.table_deletes);
	return 0;
}

static int parse_u32(const char *s, uint32_t *v)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(s, &end, 0);
	if (errno || *end || x > 0xffffffffUL)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev = "/dev/offnic0";
	uint32_t off, val;
	struct octl c;
	int err, rc;

	if (argc >= 3 && !strcmp(argv[1], "-d")) {
		dev = argv[2];
		argc -= 2;
		argv += 2;
	}
	if (argc < 2)
		return usage();
	err = octl_open(&c, dev);
	if (err)
		return fail(dev, err);
	if (!strcmp(argv[1], "info")) {
		rc = cmd_info(&c);
	} else if (!strcmp(argv[1], "blocks")) {
		rc = cmd_blocks(&c);
	} else if (!strcmp(argv[1], "read") && argc == 3 && !parse_u32(argv[2], &off)) {
		err = octl_reg_read(&c, off, &val);
		rc = err ? fail("read", err) : (printf("%#010x\n", val), 0);
	} else if (!strcmp(argv[1], "write") && argc == 4 && !parse_u32(argv[2], &off) &&
		   !parse_u32(argv[3], &val)) {
		err = octl_reg_write(&c, off, val);
		rc = err ? fail("write", err) : 0;
	} else if (!strcmp(argv[1], "counters")) {
		rc = cmd_counters(&c);
	} else if (!strcmp(argv[1], "queues")) {
		rc = cmd_queues(&c);
	} else if (!strcmp(argv[1], "fw")) {
		rc = cmd_fw(&c);
	} else if (!strcmp(argv[1], "fw-log")) {
		rc = cmd_fw_log(&c);
	} else if (!strcmp(argv[1], "cache")) {
		rc = cmd_cache(&c);
	} else if (!strcmp(argv[1], "conns")) {
		rc = cmd_conns(&c);
	} else {
		rc = usage();
	}
	octl_close(&c);
	return rc;
}
