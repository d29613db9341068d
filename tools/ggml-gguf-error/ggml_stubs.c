// What the kernels need from ggml.c / ggml-cpu.c, without the rest of ggml: the f16 table (filled
// from ggml's own GGML_COMPUTE_FP16_TO_FP32 conversion) and the abort hook.
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include "ggml.h"
#include "ggml-impl.h"
float ggml_table_f32_f16[1 << 16];
float ggml_table_f32_e8m0_half[1 << 8];
float ggml_table_f32_ue4m3[1 << 8];
__attribute__((constructor)) static void init_tables(void) {
  for (int i = 0; i < (1 << 16); i++) ggml_table_f32_f16[i] = GGML_COMPUTE_FP16_TO_FP32((ggml_fp16_t) i);
}
void ggml_abort(const char * file, int line, const char * fmt, ...) { fprintf(stderr, "ggml_abort %s:%d\n", file, line); abort(); }
size_t ggml_row_size(enum ggml_type type, int64_t ne) { (void) type; (void) ne; abort(); }
const char * ggml_type_name(enum ggml_type type) { (void) type; return "?"; }
size_t ggml_type_size(enum ggml_type type) { (void) type; abort(); }
