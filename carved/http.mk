# carved/http.mk: the HTTP side of carved (metrics, /api/state, the dashboard page built into
# the binary), its unit test and the e2e test server. Included from carved/module.mk, which
# links $(CARVED_HTTP_OBJ) with $(CARVED_HTTP_LIBS) into carved.
CARVED_HTTP_OBJ  := $(OBJ)/carved/http.o $(OBJ)/carved/metrics.o $(OBJ)/carved/dashboard_html.o
CARVED_HTTP_LIBS := -lmicrohttpd -ljansson -lpthread

# The page as C (carved_dashboard_html[], carved_dashboard_html_len), remade when it changes.
$(OBJ)/carved/dashboard_html.c: carved/dashboard.html carved/embed.sh
	@mkdir -p $(dir $@)
	sh carved/embed.sh $< $@
$(OBJ)/carved/dashboard_html.o: $(OBJ)/carved/dashboard_html.c
	$(CC) $(CFLAGS) -c $< -o $@

# Unit test of the Prometheus text.
TEST_METRICS := $(TESTDIR)/unit/test_metrics
$(TEST_METRICS): $(OBJ)/tests/unit/test_metrics.o $(OBJ)/carved/metrics.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -ljansson
$(OBJ)/tests/unit/test_metrics.o: CFLAGS += -Icarved

# The test server of tests/e2e/dashboard.sh: serves a snapshot file until killed.
HTTP_SERVE := $(TESTDIR)/e2e/http_serve
$(HTTP_SERVE): $(OBJ)/tests/e2e/http_serve.o $(CARVED_HTTP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) $(CARVED_HTTP_LIBS) -lm
$(OBJ)/tests/e2e/http_serve.o: CFLAGS += -Icarved

ALL_TARGETS  += $(TEST_METRICS) $(HTTP_SERVE)
TEST_TARGETS += $(TEST_METRICS)
