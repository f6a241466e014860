library(testthat)
library(rcompat)

test_check("rcompat")
