#!/usr/bin/env bash
# A site directory for the test cluster: Debian's OpenLDAP server (slapd) on ctl, as a site's LDAP server would be,
# for the inventory's CLUSTERFORGE_TESTBED_IDENTITY=directory (inventories/vagrant.py). Run on this machine once the
# cluster is up and deployed (ctl has the apt proxy then); tests/e2e/test_directory.py runs it and fills the
# directory itself.
#   - a CA and ctl's server certificate (SAN ctl, 10.77.0.10), made here with openssl in $TB_STATE/directory/; the
#     inventory pins ca.pem, the only CA SSSD trusts for the directory;
#   - slapd and ldap-utils on ctl through the apt proxy, suffix dc=cluster,dc=test; TLS through cn=config (StartTLS on
#     ldap://ctl: Debian's slapd listens on ldap:/// and ldapi:///); the openssh-lpk schema (sshPublicKey, which
#     Debian's slapd does not ship), ou=people, ou=groups, ou=services;
#   - cn=sssd,ou=services,dc=cluster,dc=test, the account SSSD binds as, the only one that reads the directory
#     (anonymous binds see nothing; root on ctl manages it over ldapi:///), its password made here and put into the
#     cluster's OpenBao (Vault(ldap_bind_password): secret/slurm/vagrant/ldap, field bind_password), never printed.
# Idempotent: what exists is kept. testbed/down.sh removes $TB_STATE, and with it all of this.
source "$(dirname "$0")/lib.sh"
cd "$REPO"
DIR=$TB_STATE/directory
SUFFIX=dc=cluster,dc=test
BIND_DN=cn=sssd,ou=services,$SUFFIX
install -d -m 0700 "$DIR"

if [ ! -f "$DIR/ca.pem" ]; then
  log "directory: a CA and ctl's certificate"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=clusterforge testbed LDAP CA" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
    -keyout "$DIR/ca.key" -out "$DIR/ca.pem.new" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=ctl" -keyout "$DIR/server.key" -out "$DIR/server.csr" 2>/dev/null
  printf 'subjectAltName=DNS:ctl,IP:10.77.0.10\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n' \
    > "$DIR/server.ext"
  openssl x509 -req -in "$DIR/server.csr" -CA "$DIR/ca.pem.new" -CAkey "$DIR/ca.key" -CAcreateserial -days 30 \
    -extfile "$DIR/server.ext" -out "$DIR/server.pem" 2>/dev/null
  mv "$DIR/ca.pem.new" "$DIR/ca.pem"
fi
[ -f "$DIR/bind-password" ] || (umask 077; python3 -c 'import secrets; print(secrets.token_urlsafe(24), end="")' > "$DIR/bind-password")

# What ctl runs, as root: certificates and the bind password's hash come in on stdin, in the script itself.
hash=$(python3 - "$DIR/bind-password" <<'EOF'
import base64, hashlib, os, sys
password = open(sys.argv[1]).read().strip().encode()
salt = os.urandom(8)
print("{SSHA}" + base64.b64encode(hashlib.sha1(password + salt).digest() + salt).decode())
EOF
)
{
  cat <<EOF
set -eu
export DEBIAN_FRONTEND=noninteractive
if ! dpkg-query -W -f='\${Status}' slapd 2>/dev/null | grep 'ok installed' >/dev/null; then
  debconf-set-selections <<'SEL'
slapd slapd/no_configuration boolean false
slapd slapd/domain string cluster.test
slapd shared/organization string clusterforge-test
slapd slapd/purge_database boolean true
slapd slapd/move_old_database boolean true
SEL
  apt-get install -y -q --no-install-recommends slapd ldap-utils >/dev/null 2>&1 ||
    { apt-get update -qq && apt-get install -y -q --no-install-recommends slapd ldap-utils >/dev/null; }
fi
systemctl is-active -q slapd || systemctl start slapd
install -d -m 0755 /etc/ldap/tls
cat > /etc/ldap/tls/ca.pem <<'PEM'
$(cat "$DIR/ca.pem")
PEM
cat > /etc/ldap/tls/server.pem <<'PEM'
$(cat "$DIR/server.pem")
PEM
(umask 027; cat > /etc/ldap/tls/server.key <<'PEM'
$(cat "$DIR/server.key")
PEM
)
chown root:openldap /etc/ldap/tls/server.key; chmod 0640 /etc/ldap/tls/server.key
ldapmodify -Q -Y EXTERNAL -H ldapi:/// >/dev/null <<'LDIF'
dn: cn=config
changetype: modify
replace: olcTLSCACertificateFile
olcTLSCACertificateFile: /etc/ldap/tls/ca.pem
-
replace: olcTLSCertificateFile
olcTLSCertificateFile: /etc/ldap/tls/server.pem
-
replace: olcTLSCertificateKeyFile
olcTLSCertificateKeyFile: /etc/ldap/tls/server.key
LDIF
# openssh-lpk (the schema OpenSSH's LDAP patch and SSSD read keys from): not among Debian's /etc/ldap/schema.
ldapsearch -Q -LLL -Y EXTERNAL -H ldapi:/// -b cn=schema,cn=config '(cn=*openssh-lpk)' dn | grep openssh-lpk >/dev/null ||
ldapadd -Q -Y EXTERNAL -H ldapi:/// >/dev/null <<'LDIF'
dn: cn=openssh-lpk,cn=schema,cn=config
objectClass: olcSchemaConfig
cn: openssh-lpk
olcAttributeTypes: ( 1.3.6.1.4.1.24552.500.1.1.1.13 NAME 'sshPublicKey' DESC 'MANDATORY: OpenSSH Public key' EQUALITY octetStringMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.40 )
olcObjectClasses: ( 1.3.6.1.4.1.24552.500.1.1.2.0 NAME 'ldapPublicKey' SUP top AUXILIARY DESC 'MANDATORY: OpenSSH LPK objectclass' MAY ( sshPublicKey $ uid ) )
LDIF
# Who reads what: root on ctl manages (ldapi), a bind checks its own password, SSSD's account reads, nobody else.
ldapmodify -Q -Y EXTERNAL -H ldapi:/// >/dev/null <<'LDIF'
dn: olcDatabase={1}mdb,cn=config
changetype: modify
replace: olcAccess
olcAccess: {0}to * by dn.exact=gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth manage by * break
olcAccess: {1}to attrs=userPassword by self write by anonymous auth by * none
olcAccess: {2}to * by dn.exact="$BIND_DN" read by * none
LDIF
for ou in people groups services; do
  ldapsearch -Q -LLL -Y EXTERNAL -H ldapi:/// -b "ou=\$ou,$SUFFIX" -s base dn >/dev/null 2>&1 ||
    printf 'dn: ou=%s,$SUFFIX\nobjectClass: organizationalUnit\nou: %s\n' "\$ou" "\$ou" |
    ldapadd -Q -Y EXTERNAL -H ldapi:/// >/dev/null
done
ldapsearch -Q -LLL -Y EXTERNAL -H ldapi:/// -b "$BIND_DN" -s base dn >/dev/null 2>&1 ||
  printf 'dn: $BIND_DN\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: sssd\nuserPassword: x\n' |
  ldapadd -Q -Y EXTERNAL -H ldapi:/// >/dev/null
ldapmodify -Q -Y EXTERNAL -H ldapi:/// >/dev/null <<'LDIF'
dn: $BIND_DN
changetype: modify
replace: userPassword
userPassword: $hash
LDIF
# ldap-utils on ctl trust the CA too, for the tests' StartTLS checks.
grep -qs '^TLS_CACERT /etc/ldap/tls/ca.pem' /etc/ldap/ldap.conf || echo 'TLS_CACERT /etc/ldap/tls/ca.pem' >> /etc/ldap/ldap.conf
EOF
} | bash testbed/ssh.sh ctl bash -s
# The bind password into the cluster's OpenBao, from its file (never on a command line).
VAULT_ADDR=$TB_VAULT_ADDR VAULT_TOKEN=$(cat "$TB_STATE/vault-token") \
  .venv/bin/bao kv put -mount=secret slurm/vagrant/ldap "bind_password=@$DIR/bind-password" >/dev/null
log "directory: slapd on ctl (ldap://ctl, StartTLS), bind DN $BIND_DN"
