"""The ground floor: exceptions, result types, array namespaces and dtypes, validation rules and
the eager-JAX compile policy. Nothing here names a metric."""
