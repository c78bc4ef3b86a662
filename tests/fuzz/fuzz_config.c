/*
 * The rsyncd.conf parser (daemon/config.c: config_load_string) on the
 * input as the text of a config, then each module's %VAR% expansion and
 * the lookup of a module by the name of the last one. Set variables make
 * the expansion substitute: RSYNC_USER_NAME holds shell metacharacters so
 * the shell-quoting refusal is reached.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/config.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool env_set;
	struct daemon_config cfg;
	char err[512];
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	if (!env_set) {
		setenv("RSYNC_USER_NAME", "fu zz;$(x)", 1);
		setenv("RSYNC_MODULE_NAME", "mod", 1);
		env_set = true;
	}
	memcpy(text, data, size);
	text[size] = '\0';
	config_init(&cfg);
	if (config_load_string(&cfg, text, "fuzz.conf", err, sizeof err) == 0) {
		for (size_t i = 0; i < cfg.nmodules; i++) {
			struct daemon_module m;
			if (config_module_expand(&cfg.modules[i], &m, err, sizeof err) == 0)
				config_module_free(&m);
		}
		if (cfg.nmodules)
			config_find_module(&cfg, cfg.modules[cfg.nmodules - 1].name);
	}
	config_free(&cfg);
	free(text);
	return 0;
}
