/* tests/tile/tile_tests.h: the test cases of the tile suite, by file
 * (test_tile.c lists them for cmocka and CTest). */
#ifndef PLD_TESTS_TILE_TESTS_H
#define PLD_TESTS_TILE_TESTS_H

/* test_mem.c */
void test_tile_new_pads_rows(void **state);
void test_tile_first_fit_reuses_gap(void **state);
void test_tile_over_capacity(void **state);
void test_tile_capacity_exact_fit(void **state);
void test_tile_fragmented(void **state);
void test_tile_a5sim_six_tiles_fit(void **state);
void test_tile_one_granule_over(void **state);
void test_tile_count_bound_by_capacity_only(void **state);
void test_tile_first_fit_model(void **state);
void test_tile_dead_after_block(void **state);
void test_tile_bad_shape_and_dtype(void **state);
void test_tile_movement_only_dtypes(void **state);
void test_tile_free_rules(void **state);
void test_tile_of_another_core(void **state);
void test_sticky_first_failure(void **state);
void test_load_store_region_all_dtypes(void **state);
void test_load_sees_tensor_as_matrix(void **state);
void test_load_store_out_of_bounds(void **state);
void test_store_to_in_tensor(void **state);
void test_load_store_dtype_mismatch(void **state);
void test_tensor_without_data(void **state);
void test_read_write_elements(void **state);
void test_read_write_errors(void **state);
void test_full_and_fill_convert(void **state);
void test_prefetch_double_buffered(void **state);
void test_prefetch_misuse(void **state);

/* test_ops.c */
void test_add_all_dtypes(void **state);
void test_sub_all_dtypes(void **state);
void test_mul_all_dtypes(void **state);
void test_div_all_dtypes(void **state);
void test_maximum_all_dtypes(void **state);
void test_minimum_all_dtypes(void **state);
void test_neg_abs_relu_all_dtypes(void **state);
void test_float_unary_all_float_dtypes(void **state);
void test_in_place_aliasing(void **state);
void test_integer_wrap_and_division(void **state);
void test_float_special_values(void **state);
void test_int_divide_by_zero_tile(void **state);
void test_int_divide_by_zero_scalar(void **state);
void test_float_only_ops_reject_integers(void **state);
void test_shape_and_dtype_mismatch(void **state);
void test_row_reductions_all_dtypes(void **state);
void test_col_reductions_all_dtypes(void **state);
void test_reduction_values(void **state);
void test_reduction_shape_errors(void **state);
void test_expand_all_dtypes(void **state);

/* test_cast_math.c */
void test_cast_all_pairs(void **state);
void test_cast_rounding_and_saturation(void **state);
void test_cast_same_dtype_and_in_place(void **state);
void test_exp_accuracy(void **state);
void test_log_accuracy(void **state);

/* test_matmul.c */
void test_matmul_fp32_shapes(void **state);
void test_matmul_acc(void **state);
void test_matmul_fp16_bf16(void **state);
void test_matmul_aliasing(void **state);
void test_matmul_on_vector_core(void **state);
void test_matmul_operand_too_large(void **state);
void test_matmul_argument_errors(void **state);

/* test_levels.c */
void test_cube_core_refuses_vector_ops(void **state);
void test_vector_op_table_is_complete(void **state);
void test_cube_core_allowed_calls(void **state);

/* test_route.c */
void test_cmp_all_dtypes(void **state);
void test_select_all_dtypes(void **state);
void test_cast_masks(void **state);
void test_row_argmax_all_dtypes(void **state);
void test_row_argmin_all_dtypes(void **state);
void test_row_topk_all_dtypes(void **state);
void test_row_topk_int_min(void **state);
void test_ranking_errors(void **state);
void test_row_cumsum_all_dtypes(void **state);
void test_col_cumsum_all_dtypes(void **state);
void test_rem_all_dtypes(void **state);
void test_bitwise_and_shifts(void **state);
void test_iota_all_dtypes(void **state);
void test_route_argument_errors(void **state);

/* test_isa.c */
void test_isa_level_in_force(void **state);

#endif
