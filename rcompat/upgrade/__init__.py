"""rcompat upgrade: will this machine's or image OLD's extensions, R packages and CUDA stack survive moving to NEW?"""
